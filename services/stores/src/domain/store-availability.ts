import { isWithinHours, nextHoursOpening, type StoreAvailability } from '@pcp/contracts';
import type { StoreRow } from '../db/store.table.js';

export type AvailabilityColumns = Pick<
  StoreRow,
  'store_id' | 'status' | 'resume_at' | 'availability' | 'special_days' | 'timezone'
>;

/**
 * Takes orders at `instant`: online or busy, or paused until a `resumeAt` that has come
 * (derived, no job). A busy spell past its `resumeAt` is online, so takes orders too.
 */
function takesOrdersAt(row: AvailabilityColumns, instant: Date): boolean {
  return row.status !== 'paused' || (row.resume_at !== null && row.resume_at <= instant);
}

const hoursOf = (row: AvailabilityColumns) => ({
  windows: row.availability,
  specialDays: row.special_days,
});

/**
 * Whether the store takes orders at `instant`: not paused, and inside its hours (special days
 * included) in its own zone.
 */
export function isOpenAt(row: AvailabilityColumns, instant: Date): boolean {
  return takesOrdersAt(row, instant) && isWithinHours(hoursOf(row), row.timezone, instant);
}

/**
 * Whether the store takes orders at `instant` (not paused, and inside its hours, special days
 * included, in its own time zone) and, when not, the next instant it will
 * (docs/guide/stores.md#special-hours). A pause without `resumeAt` lasts until the partner
 * ends it, so it never reopens on its own.
 */
export function availabilityAt(row: AvailabilityColumns, instant: Date): StoreAvailability {
  const hours = hoursOf(row);
  const online = takesOrdersAt(row, instant);
  const open = online && isWithinHours(hours, row.timezone, instant);
  let nextOpenAt: Date | null = null;
  if (!open) {
    const from = online ? instant : row.resume_at;
    nextOpenAt = from ? nextHoursOpening(hours, row.timezone, from) : null;
  }
  return {
    storeId: row.store_id,
    at: instant.toISOString(),
    open,
    closedReason: open ? null : online ? 'outside_hours' : 'paused',
    nextOpenAt: nextOpenAt?.toISOString() ?? null,
    timezone: row.timezone,
  };
}
