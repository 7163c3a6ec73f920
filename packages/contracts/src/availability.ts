import { LRUCache } from 'lru-cache';
import { IANAZone } from 'luxon';
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

/**
 * End of day: an `end` of 00:00:00 closes the window at midnight
 * (docs/guide/catalogs.md#availability-windows).
 */
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
const DAY_MS = 86_400_000;
/**
 * Two weeks and a day: every weekly window recurs within it, even one that falls into a
 * skipped hour this week.
 */
const SEARCH_DAYS = 15;

function secondsOfDay(time: string): number {
  const [hours = 0, minutes = 0, seconds = 0] = time.split(':').map(Number);
  return hours * 3_600 + minutes * 60 + seconds;
}

/** Zone offsets remembered, across all zones (about 100 bytes each: a few MB). */
const offsetCache = new LRUCache<string, number>({ max: 50_000 });

/**
 * The zone's UTC offset (minutes) at an instant. Zone rules come from luxon (the runtime's
 * tz data); results are cached per zone and minute, since offsets change only on whole
 * minutes and discovery asks the same few instants for many stores.
 */
function offsetMinutes(timezone: string, millis: number): number {
  const minute = Math.floor(millis / MINUTE_MS);
  const key = `${timezone} ${minute}`;
  let offset = offsetCache.get(key);
  if (offset === undefined) {
    offset = IANAZone.create(timezone).offset(minute * MINUTE_MS);
    offsetCache.set(key, offset);
  }
  return offset;
}

/**
 * The local wall clock of an instant, as a Date whose UTC fields read the local date and
 * time ("naive" local time).
 */
const naiveLocal = (millis: number, timezone: string) =>
  millis + offsetMinutes(timezone, millis) * MINUTE_MS;

function isWithinMillis(
  windows: readonly AvailabilityWindow[],
  timezone: string,
  millis: number,
): boolean {
  const local = new Date(naiveLocal(millis, timezone));
  const day = dayOfWeek.options[local.getUTCDay()]!;
  const seconds = local.getUTCHours() * 3_600 + local.getUTCMinutes() * 60 + local.getUTCSeconds();
  return windows.some(
    (window) =>
      window.dayOfWeek === day &&
      seconds >= secondsOfDay(window.start) &&
      (window.end === END_OF_DAY || seconds < secondsOfDay(window.end)),
  );
}

/**
 * True when `instant` falls inside one of the weekly windows, read in the store's time
 * zone (start inclusive, end exclusive; an end of 00:00:00 is the end of the day). Empty
 * or null windows never open (docs/guide/catalogs.md#availability-windows).
 */
export function isWithinWindows(
  windows: readonly AvailabilityWindow[] | null | undefined,
  timezone: string,
  instant: Date,
): boolean {
  if (!windows || windows.length === 0) return false;
  return isWithinMillis(windows, timezone, instant.getTime());
}

/**
 * Every instant whose local reading is the naive local time `naive`: none in a gap (clocks
 * forward), two in a repeated hour (clocks back), one otherwise. An instant t reads `naive`
 * when naive = t + offset(t); the offsets in play are those a day before and after.
 */
function occurrencesOf(naive: number, timezone: string): number[] {
  const offsets = new Set([
    offsetMinutes(timezone, naive - DAY_MS),
    offsetMinutes(timezone, naive + DAY_MS),
  ]);
  return [...offsets]
    .map((offset) => naive - offset * MINUTE_MS)
    .filter((millis) => naiveLocal(millis, timezone) === naive)
    .sort((a, b) => a - b);
}

/** The instant within [start, end) where the zone's offset changes, if it does. */
function offsetChangeWithin(start: number, end: number, timezone: string): number | undefined {
  const last = offsetMinutes(timezone, end - 1);
  if (offsetMinutes(timezone, start) === last) return undefined;
  let low = Math.floor(start / MINUTE_MS);
  let high = Math.ceil((end - 1) / MINUTE_MS);
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetMinutes(timezone, middle * MINUTE_MS) === last) high = middle;
    else low = middle;
  }
  return high * MINUTE_MS;
}

/** The first instant of a local day (given as naive midnight); later than midnight when a clock change skips it. */
function dayStart(naiveMidnight: number, timezone: string): number {
  const [first] = occurrencesOf(naiveMidnight, timezone);
  if (first !== undefined) return first;
  const change = offsetChangeWithin(naiveMidnight - DAY_MS, naiveMidnight + DAY_MS, timezone);
  return change ?? naiveMidnight - offsetMinutes(timezone, naiveMidnight) * MINUTE_MS;
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
  const fromMillis = from.getTime();
  if (isWithinMillis(windows, timezone, fromMillis)) return from;
  const local = new Date(naiveLocal(fromMillis, timezone));
  const firstMidnight = Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate());
  for (let offset = 0; offset < SEARCH_DAYS; offset++) {
    const midnight = firstMidnight + offset * DAY_MS;
    const day = dayOfWeek.options[new Date(midnight).getUTCDay()]!;
    const start = dayStart(midnight, timezone);
    const change = offsetChangeWithin(start, dayStart(midnight + DAY_MS, timezone), timezone);
    const candidates = [start, ...(change === undefined ? [] : [change])];
    for (const window of windows) {
      if (window.dayOfWeek === day) {
        candidates.push(...occurrencesOf(midnight + secondsOfDay(window.start) * 1_000, timezone));
      }
    }
    const opening = candidates
      .filter((millis) => millis >= fromMillis)
      .sort((a, b) => a - b)
      .find((millis) => isWithinMillis(windows, timezone, millis));
    if (opening !== undefined) return new Date(opening);
  }
  return null;
}
