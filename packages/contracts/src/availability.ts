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
/**
 * Two weeks and a day: every weekly window recurs within it, even one that falls into a
 * skipped hour this week.
 */
const SEARCH_DAYS = 15;

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

/** Every instant whose local reading on `date` is `time`: none in a gap, two in a repeated hour. */
function occurrencesOf(date: DateTime, time: string, timezone: string): number[] {
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
  const reads = (candidate: DateTime) =>
    candidate.hasSame(date, 'day') &&
    candidate.hour * 3_600 + candidate.minute * 60 + candidate.second === seconds;
  // luxon resolves a repeated reading to one of its two instants; the other lies one
  // offset change away.
  const before = DateTime.fromMillis(wanted.toMillis() - 3 * 3_600_000, { zone: timezone });
  const after = DateTime.fromMillis(wanted.toMillis() + 3 * 3_600_000, { zone: timezone });
  const others = [
    wanted.toMillis() + (wanted.offset - before.offset) * MINUTE_MS,
    wanted.toMillis() + (wanted.offset - after.offset) * MINUTE_MS,
  ].map((millis) => DateTime.fromMillis(millis, { zone: timezone }));
  return [wanted, ...others].filter(reads).map((candidate) => candidate.toMillis());
}

/** The instant within [start, end) where the zone's offset changes, if it does. */
function offsetChangeWithin(start: number, end: number, timezone: string): number | undefined {
  const offsetAt = (millis: number) => DateTime.fromMillis(millis, { zone: timezone }).offset;
  const last = offsetAt(end - 1);
  if (offsetAt(start) === last) return undefined;
  // Zone transitions fall on whole minutes.
  let low = Math.floor(start / MINUTE_MS);
  let high = Math.ceil((end - 1) / MINUTE_MS);
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetAt(middle * MINUTE_MS) === last) high = middle;
    else low = middle;
  }
  return high * MINUTE_MS;
}

/**
 * The earliest instant at or after `from` inside one of the windows, or null when they
 * never open. A window can only begin where the local clock reads one of its starts
 * (twice in a repeated fall-back hour), where the clock jumps (a daylight-saving change)
 * or where a local day begins, so those instants are the candidates, confirmed with
 * `isWithinWindows`.
 */
export function nextWindowOpening(
  windows: readonly AvailabilityWindow[] | null | undefined,
  timezone: string,
  from: Date,
): Date | null {
  if (!windows || windows.length === 0) return null;
  if (isWithinWindows(windows, timezone, from)) return from;
  const firstDay = DateTime.fromJSDate(from, { zone: timezone }).startOf('day');
  for (let offset = 0; offset < SEARCH_DAYS; offset++) {
    const date = firstDay.plus({ days: offset });
    const day = dayOfWeek.options[date.weekday % 7]!;
    const candidates = windows
      .filter((window) => window.dayOfWeek === day)
      .flatMap((window) => occurrencesOf(date, window.start, timezone));
    // A clock change inside the day, or one at its very start (a zone that skips midnight
    // begins the day at 01:00, possibly in the middle of a window).
    const change = offsetChangeWithin(date.toMillis(), date.plus({ days: 1 }).toMillis(), timezone);
    candidates.push(date.toMillis(), ...(change === undefined ? [] : [change]));
    const opening = candidates
      .filter((millis) => millis >= from.getTime())
      .sort((a, b) => a - b)
      .find((millis) => isWithinWindows(windows, timezone, new Date(millis)));
    if (opening !== undefined) return new Date(opening);
  }
  return null;
}
