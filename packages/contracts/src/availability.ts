import { z } from 'zod';

export const dayOfWeek = z.enum([
  'Sunday',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
]);
export type DayOfWeek = z.infer<typeof dayOfWeek>;

/** A wall-clock time `HH:mm:ss` in the store's time zone. */
export const localTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d:[0-5]\d$/, 'Expected HH:mm:ss');

/** End of day: an `end` of 00:00:00 closes the window at midnight (contract §3). */
export const END_OF_DAY = '00:00:00';

/**
 * One opening window on one day of the week, in the store's time zone. Overnight opening is
 * two windows; `end` must be after `start` unless it is 00:00:00 (end of day).
 */
export const availabilityWindow = z
  .object({ dayOfWeek, start: localTime, end: localTime })
  .refine((window) => window.end === END_OF_DAY || window.start < window.end, {
    message: 'end must be after start (use 00:00:00 for end of day; split overnight windows)',
    path: ['end'],
  });
export type AvailabilityWindow = z.infer<typeof availabilityWindow>;

/** Opening windows; null or empty means never open (fail-closed). */
export const availability = z.array(availabilityWindow).max(70);
