import { isWithinHours, takesOrdersAt, type AvailabilityInputs } from '@pcp/contracts';
import type { StoreRow } from '../db/store.table.js';

export type AvailabilityColumns = Pick<
  StoreRow,
  'store_id' | 'status' | 'resume_at' | 'availability' | 'special_days' | 'timezone'
>;

const inputsOf = (row: AvailabilityColumns): AvailabilityInputs => ({
  storeId: row.store_id,
  status: row.status,
  resumeAt: row.resume_at,
  hours: { windows: row.availability, specialDays: row.special_days },
  timezone: row.timezone,
});

/**
 * Whether the store takes orders at `instant`: not paused, and inside its hours (special days
 * included) in its own zone.
 */
export function isOpenAt(row: AvailabilityColumns, instant: Date): boolean {
  const inputs = inputsOf(row);
  return takesOrdersAt(inputs, instant) && isWithinHours(inputs.hours, row.timezone, instant);
}
