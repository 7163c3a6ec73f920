import { localDateOf, type StoreEventData } from '@pcp/contracts';
import type { StoreRow } from '../db/store.table.js';
import { effectiveStatus } from './store-profile.js';

/** `store.status_changed`: the status as `GET …/status` reads it at `now`. */
export function statusChangedData(row: StoreRow, now: Date): StoreEventData {
  return { event: 'store.status_changed', storeId: row.store_id, ...effectiveStatus(row, now) };
}

/**
 * `store.hours_changed`: the weekly hours, in the store's time zone, and its special days from
 * its local today on (past dates no longer change an opening).
 */
export function hoursChangedData(row: StoreRow, now: Date): StoreEventData {
  const today = localDateOf(row.timezone, now);
  return {
    event: 'store.hours_changed',
    storeId: row.store_id,
    timezone: row.timezone,
    availability: row.availability,
    specialDays: row.special_days.filter((day) => day.date >= today),
  };
}

/** Whether a profile change moves the store's hours (what `store.hours_changed` announces). */
export function hoursDiffer(before: StoreRow, after: StoreRow): boolean {
  return (
    before.timezone !== after.timezone ||
    JSON.stringify(before.availability) !== JSON.stringify(after.availability)
  );
}
