import { isWithinWindows, nextWindowOpening, type StoreAvailability } from '@pcp/contracts';
import type { StoreRow } from '../db/store.table.js';

type AvailabilityColumns = Pick<
  StoreRow,
  'store_id' | 'status' | 'resume_at' | 'availability' | 'timezone'
>;

/** Online at `instant`: not paused, or the pause's `resumeAt` has come (derived, no job). */
function onlineAt(row: AvailabilityColumns, instant: Date): boolean {
  return row.status === 'online' || (row.resume_at !== null && row.resume_at <= instant);
}

/** Whether the store takes orders at `instant`: online and inside a window in its own zone. */
export function isOpenAt(row: AvailabilityColumns, instant: Date): boolean {
  return onlineAt(row, instant) && isWithinWindows(row.availability, row.timezone, instant);
}

/**
 * Whether the store takes orders at `instant` (online and inside a window in its own time
 * zone) and, when not, the next instant it will (docs/guide/stores.md#store-status). A pause
 * without `resumeAt` lasts until the partner ends it, so it never reopens on its own.
 */
export function availabilityAt(row: AvailabilityColumns, instant: Date): StoreAvailability {
  const inWindow = isWithinWindows(row.availability, row.timezone, instant);
  const online = onlineAt(row, instant);
  const open = online && inWindow;
  let nextOpenAt: Date | null = null;
  if (!open) {
    const from = online ? instant : row.resume_at;
    nextOpenAt = from ? nextWindowOpening(row.availability, row.timezone, from) : null;
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
