import { DateTime } from 'luxon';
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

const MINUTE_MS = 60_000;
/** A week and a day: every weekly window recurs within it. */
const SEARCH_DAYS = 8;

function secondsOfDay(time: string): number {
  const [hours = 0, minutes = 0, seconds = 0] = time.split(':').map(Number);
  return hours * 3_600 + minutes * 60 + seconds;
}

/** Local weekday name and seconds since local midnight of an instant in `timezone`. */
function localClock(
  instant: Date,
  timezone: string,
): { day: DayOfWeek; seconds: number; date: DateTime } {
  const date = DateTime.fromJSDate(instant, { zone: timezone });
  return {
    day: dayOfWeek.options[date.weekday % 7]!,
    seconds: date.hour * 3_600 + date.minute * 60 + date.second,
    date,
  };
}

/**
 * True when `instant` falls inside one of the weekly windows, read in the store's time
 * zone (start inclusive, end exclusive; an end of 00:00:00 is the end of the day). Empty
 * or null windows never open (contract §3).
 */
export function isWithinWindows(
  windows: readonly AvailabilityWindow[] | null | undefined,
  timezone: string,
  instant: Date,
): boolean {
  if (!windows || windows.length === 0) return false;
  const { day, seconds } = localClock(instant, timezone);
  return windows.some(
    (window) =>
      window.dayOfWeek === day &&
      seconds >= secondsOfDay(window.start) &&
      (window.end === END_OF_DAY || seconds < secondsOfDay(window.end)),
  );
}

/**
 * The first instant whose local wall-clock reading on `date` is at or after `time`. When
 * `time` falls in a daylight-saving gap (02:30 on a spring-forward night), that is the
 * transition itself, the first instant after the gap.
 */
function firstInstantAtOrAfter(date: DateTime, time: string, timezone: string): Date {
  const seconds = secondsOfDay(time);
  const wanted = DateTime.fromObject(
    {
      year: date.year,
      month: date.month,
      day: date.day,
      hour: Math.floor(seconds / 3_600),
      minute: Math.floor(seconds / 60) % 60,
      second: seconds % 60,
    },
    { zone: timezone },
  );
  const reading = wanted.hour * 3_600 + wanted.minute * 60 + wanted.second;
  if (wanted.hasSame(date, 'day') && reading === seconds) {
    // A time that occurs twice (the repeated hour when clocks fall back): luxon takes the
    // later one; the earlier reading under the previous offset comes first.
    const before = DateTime.fromMillis(wanted.toMillis() - 3 * 3_600_000, { zone: timezone });
    const earlier = DateTime.fromMillis(
      wanted.toMillis() + (wanted.offset - before.offset) * MINUTE_MS,
      {
        zone: timezone,
      },
    );
    const same =
      earlier.hasSame(date, 'day') &&
      earlier.hour * 3_600 + earlier.minute * 60 + earlier.second === seconds;
    return same && earlier < wanted ? earlier.toJSDate() : wanted.toJSDate();
  }
  // In a gap luxon moves forward by the gap's length. Zone transitions fall on whole
  // minutes, so search the minutes of the three hours before for the first one at or after.
  const targetDay = date.toISODate();
  const atOrAfter = (minute: number) => {
    const local = DateTime.fromMillis(minute * MINUTE_MS, { zone: timezone });
    const day = local.toISODate() ?? '';
    if (day !== targetDay) return day > (targetDay ?? '');
    return local.hour * 3_600 + local.minute * 60 + local.second >= seconds;
  };
  let before = Math.floor((wanted.toMillis() - 3 * 3_600_000) / MINUTE_MS);
  let after = Math.ceil(wanted.toMillis() / MINUTE_MS);
  while (after - before > 1) {
    const middle = Math.floor((before + after) / 2);
    if (atOrAfter(middle)) after = middle;
    else before = middle;
  }
  return new Date(after * MINUTE_MS);
}

/**
 * The earliest instant at or after `from` inside one of the windows, or null when they
 * never open. Exact across daylight-saving changes.
 */
export function nextWindowOpening(
  windows: readonly AvailabilityWindow[] | null | undefined,
  timezone: string,
  from: Date,
): Date | null {
  if (!windows || windows.length === 0) return null;
  if (isWithinWindows(windows, timezone, from)) return from;
  const startOfDay = DateTime.fromJSDate(from, { zone: timezone }).startOf('day');
  for (let offset = 0; offset < SEARCH_DAYS; offset++) {
    const date = startOfDay.plus({ days: offset });
    const day = dayOfWeek.options[date.weekday % 7]!;
    const opening = windows
      .filter((window) => window.dayOfWeek === day)
      .map((window) => ({
        start: firstInstantAtOrAfter(date, window.start, timezone),
        end:
          window.end === END_OF_DAY
            ? firstInstantAtOrAfter(date.plus({ days: 1 }), END_OF_DAY, timezone)
            : firstInstantAtOrAfter(date, window.end, timezone),
      }))
      .filter(({ start, end }) => end > from && start < end)
      .sort((a, b) => a.start.getTime() - b.start.getTime())[0];
    if (opening) return opening.start > from ? opening.start : from;
  }
  return null;
}
