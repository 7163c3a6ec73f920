import { LRUCache } from 'lru-cache';
import { IANAZone } from 'luxon';
import { z } from 'zod';
import type { SpecialDay } from './store-operations.js';

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

/** One opening window of a local day, in seconds since its midnight (end exclusive). */
interface DayWindow {
  start: number;
  end: number;
}

/**
 * Opening hours: weekly windows, and special days whose hours replace them on their dates
 * (docs/guide/stores.md#special-hours).
 */
export interface OpeningHours {
  /** Weekly windows; null or empty: closed except on special days with windows. */
  readonly windows: readonly AvailabilityWindow[] | null | undefined;
  /** Dates (`YYYY-MM-DD` in the store's time zone) with their own hours. */
  readonly specialDays?: readonly SpecialDay[] | null | undefined;
}

/** Hours compiled for lookups by local day (days since the epoch of the naive local time). */
interface CompiledHours {
  weekly: DayWindow[][];
  special: Map<number, DayWindow[]>;
  /** The last special day, or -Infinity without any. */
  lastSpecialDay: number;
  /** Whether some day of the week has a window. */
  hasWeekly: boolean;
  /** The special days with windows, ascending. */
  openSpecialDays: number[];
}

const toDayWindow = (window: { start: string; end: string }): DayWindow => ({
  start: secondsOfDay(window.start),
  end: window.end === END_OF_DAY ? 86_400 : secondsOfDay(window.end),
});

/** Days since the epoch of a `YYYY-MM-DD` date. */
const epochDay = (date: string) => Math.floor(Date.parse(`${date}T00:00:00Z`) / DAY_MS);

function compileHours(hours: OpeningHours): CompiledHours {
  const weekly: DayWindow[][] = dayOfWeek.options.map(() => []);
  for (const window of hours.windows ?? []) {
    weekly[dayOfWeek.options.indexOf(window.dayOfWeek)]!.push(toDayWindow(window));
  }
  const special = new Map<number, DayWindow[]>();
  let lastSpecialDay = -Infinity;
  for (const day of hours.specialDays ?? []) {
    const epoch = epochDay(day.date);
    special.set(epoch, 'closed' in day ? [] : day.windows.map(toDayWindow));
    lastSpecialDay = Math.max(lastSpecialDay, epoch);
  }
  const openSpecialDays = [...special]
    .filter(([, windows]) => windows.length > 0)
    .map(([day]) => day)
    .sort((a, b) => a - b);
  const hasWeekly = weekly.some((windows) => windows.length > 0);
  return { weekly, special, lastSpecialDay, hasWeekly, openSpecialDays };
}

/**
 * The local days (days since the epoch) from `firstDay` on that may hold the next opening,
 * in order: without weekly windows only the special days with windows, so a special day
 * years ahead costs no walk to it; otherwise every day to the last special day and two weeks
 * and a day after (a run of closed special days ends there, and every weekly window recurs
 * within it).
 */
function* daysToSearch(hours: CompiledHours, firstDay: number): Generator<number> {
  if (!hours.hasWeekly) {
    for (const day of hours.openSpecialDays) if (day >= firstDay) yield day;
    return;
  }
  const lastDay = Math.max(firstDay, hours.lastSpecialDay) + SEARCH_DAYS;
  for (let day = firstDay; day < lastDay; day++) yield day;
}

/** The windows of a local day (days since the epoch): its special day's, else the weekly ones. */
function windowsOfDay(hours: CompiledHours, day: number): DayWindow[] {
  // 1970-01-01 was a Thursday (index 4).
  return hours.special.get(day) ?? hours.weekly[(((day + 4) % 7) + 7) % 7]!;
}

function isOpenMillis(hours: CompiledHours, timezone: string, millis: number): boolean {
  const { day, seconds } = localReading(timezone, millis);
  return windowsOfDay(hours, day).some((window) => seconds >= window.start && seconds < window.end);
}

/** The local day (days since the epoch) and second of that day an instant reads. */
function localReading(timezone: string, millis: number): { day: number; seconds: number } {
  const local = naiveLocal(millis, timezone);
  const day = Math.floor(local / DAY_MS);
  return { day, seconds: Math.floor((local - day * DAY_MS) / 1_000) };
}

/** Whether a weekly window of the day's weekday holds the second (no allocation: hot path). */
function inWeeklyWindows(
  windows: readonly AvailabilityWindow[],
  day: number,
  seconds: number,
): boolean {
  const weekday = dayOfWeek.options[(((day + 4) % 7) + 7) % 7];
  return windows.some(
    (window) =>
      window.dayOfWeek === weekday &&
      seconds >= secondsOfDay(window.start) &&
      (window.end === END_OF_DAY || seconds < secondsOfDay(window.end)),
  );
}

/**
 * True when `instant` falls inside the hours, read in the store's time zone: the special
 * day's windows on its date (none when closed), the weekly windows on other dates (start
 * inclusive, end exclusive; an end of 00:00:00 is the end of the day). No windows never open
 * (docs/guide/stores.md#special-hours).
 */
export function isWithinHours(hours: OpeningHours, timezone: string, instant: Date): boolean {
  const { day, seconds } = localReading(timezone, instant.getTime());
  if (hours.specialDays && hours.specialDays.length > 0) {
    const date = new Date(day * DAY_MS).toISOString().slice(0, 10);
    const special = hours.specialDays.find((candidate) => candidate.date === date);
    if (special) {
      return (
        !('closed' in special) &&
        special.windows
          .map(toDayWindow)
          .some((window) => seconds >= window.start && seconds < window.end)
      );
    }
  }
  return inWeeklyWindows(hours.windows ?? [], day, seconds);
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
  const { day, seconds } = localReading(timezone, instant.getTime());
  return inWeeklyWindows(windows, day, seconds);
}

/**
 * The local calendar date (`YYYY-MM-DD`) of an instant in a time zone: the date special days
 * are keyed by.
 */
export function localDateOf(timezone: string, instant: Date): string {
  return new Date(naiveLocal(instant.getTime(), timezone)).toISOString().slice(0, 10);
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
 * The earliest instant at or after `from` inside the hours (special days included), or null
 * when they never open. A window can only begin where the local clock reads one of its
 * starts (twice in a repeated fall-back hour), where the clock jumps (a daylight-saving
 * change) or where a local day begins, so those instants are the candidates, confirmed by
 * the same rule as `isWithinHours`. Days without windows (closed special days) cost one map
 * look-up, so the search runs past any run of them (`daysToSearch`); its work is bounded by
 * the special days, however far ahead they lie.
 */
export function nextHoursOpening(hours: OpeningHours, timezone: string, from: Date): Date | null {
  const compiled = compileHours(hours);
  const fromMillis = from.getTime();
  if (isOpenMillis(compiled, timezone, fromMillis)) return from;
  const firstDay = Math.floor(naiveLocal(fromMillis, timezone) / DAY_MS);
  for (const day of daysToSearch(compiled, firstDay)) {
    const windows = windowsOfDay(compiled, day);
    if (windows.length === 0) continue;
    const midnight = day * DAY_MS;
    const start = dayStart(midnight, timezone);
    const change = offsetChangeWithin(start, dayStart(midnight + DAY_MS, timezone), timezone);
    const candidates = [start, ...(change === undefined ? [] : [change])];
    for (const window of windows) {
      candidates.push(...occurrencesOf(midnight + window.start * 1_000, timezone));
    }
    const opening = candidates
      .filter((millis) => millis >= fromMillis)
      .sort((a, b) => a - b)
      .find((millis) => isOpenMillis(compiled, timezone, millis));
    if (opening !== undefined) return new Date(opening);
  }
  return null;
}

/**
 * The earliest instant at or after `from` inside the weekly windows, or null when they
 * never open (`nextHoursOpening` without special days).
 */
export function nextWindowOpening(
  windows: readonly AvailabilityWindow[] | null | undefined,
  timezone: string,
  from: Date,
): Date | null {
  if (!windows || windows.length === 0) return null;
  return nextHoursOpening({ windows }, timezone, from);
}
