import {
  availabilityWindow,
  isWithinWindows,
  nextWindowOpening,
  type AvailabilityWindow,
  type DayOfWeek,
} from '@pcp/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

// ---------------------------------------------------------------------------------------------
// Independent oracle: wall clock readings straight from Intl (no luxon).
// ---------------------------------------------------------------------------------------------

const DAYS = [
  'Sunday',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
] as const satisfies readonly DayOfWeek[];

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const END_OF_DAY = '00:00:00';

interface Wall {
  weekday: string;
  year: number;
  month: number;
  day: number;
  /** Seconds since local midnight. */
  seconds: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'long',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, format);
  }
  return format;
}

function wall(timeZone: string, ms: number): Wall {
  const parts: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(ms))) {
    parts[part.type] = part.value;
  }
  const num = (type: string) => Number(parts[type]);
  return {
    weekday: parts.weekday ?? '',
    year: num('year'),
    month: num('month'),
    day: num('day'),
    seconds: num('hour') * 3_600 + num('minute') * 60 + num('second'),
  };
}

/** UTC offset (local minus UTC) in milliseconds at an instant. */
function offsetAt(timeZone: string, ms: number): number {
  const reading = wall(timeZone, ms);
  const local = Date.UTC(reading.year, reading.month - 1, reading.day) + reading.seconds * SECOND;
  return local - (ms - (((ms % SECOND) + SECOND) % SECOND));
}

function toSeconds(time: string): number {
  const [h = '0', m = '0', s = '0'] = time.split(':');
  return Number(h) * 3_600 + Number(m) * 60 + Number(s);
}

/** End of the window in seconds of its day: 00:00:00 is the end of the day. */
function endSeconds(window: AvailabilityWindow): number {
  return window.end === END_OF_DAY ? 86_400 : toSeconds(window.end);
}

function oracleInside(
  windows: readonly AvailabilityWindow[] | null | undefined,
  timeZone: string,
  ms: number,
): boolean {
  if (!windows) return false;
  const reading = wall(timeZone, ms);
  return windows.some(
    (window) =>
      window.dayOfWeek === reading.weekday &&
      reading.seconds >= toSeconds(window.start) &&
      reading.seconds < endSeconds(window),
  );
}

interface Transition {
  at: number;
  before: number;
  after: number;
}

/** Offset changes between Dec 2024 and Feb 2029, to the minute (found by bisection). */
function findTransitions(timeZone: string): Transition[] {
  const found: Transition[] = [];
  let previous = Date.UTC(2024, 11, 1);
  let previousOffset = offsetAt(timeZone, previous);
  for (let ms = previous + DAY; ms <= Date.UTC(2029, 1, 1); ms += DAY) {
    const offset = offsetAt(timeZone, ms);
    if (offset !== previousOffset) {
      let low = previous;
      let high = ms;
      while (high - low > MINUTE) {
        const middle = low + Math.floor((high - low) / 2 / MINUTE) * MINUTE;
        if (offsetAt(timeZone, middle) === previousOffset) low = middle;
        else high = middle;
      }
      found.push({ at: high, before: previousOffset, after: offset });
    }
    previous = ms;
    previousOffset = offset;
  }
  return found;
}

const ZONES = [
  'America/Chicago',
  'America/New_York',
  'America/Los_Angeles',
  'Europe/London',
  'Europe/Berlin',
  'Asia/Kolkata',
  'Asia/Tokyo',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'Pacific/Auckland',
  'America/Sao_Paulo',
  'UTC',
] as const;
type Zone = (typeof ZONES)[number];

const TRANSITIONS = new Map<string, Transition[]>(
  ZONES.map((zone) => [zone, findTransitions(zone)]),
);

function transitionsNear(timeZone: string, fromMs: number, toMs: number): Transition[] {
  return (TRANSITIONS.get(timeZone) ?? []).filter(({ at }) => at >= fromMs && at <= toMs);
}

/**
 * Every instant in (after, before) whose wall-clock reading is the start of a window (both
 * occurrences of a repeated time; none for a skipped one).
 */
function windowStartInstants(
  windows: readonly AvailabilityWindow[],
  timeZone: string,
  after: number,
  before: number,
): number[] {
  const first = wall(timeZone, after);
  const firstDate = Date.UTC(first.year, first.month - 1, first.day);
  const instants: number[] = [];
  for (let date = firstDate - DAY; date <= before + 2 * DAY; date += DAY) {
    const weekday = DAYS[new Date(date).getUTCDay()];
    for (const window of windows) {
      if (window.dayOfWeek !== weekday) continue;
      const local = date + toSeconds(window.start) * SECOND;
      const offsets = new Set([
        offsetAt(timeZone, local - 18 * HOUR),
        offsetAt(timeZone, local + 18 * HOUR),
      ]);
      for (const offset of offsets) {
        const instant = local - offset;
        if (instant > after && instant < before && offsetAt(timeZone, instant) === offset) {
          instants.push(instant);
        }
      }
    }
  }
  return instants;
}

/**
 * Instants in (after, before) where an opening could happen: window starts, offset changes
 * (a start inside a skipped hour opens there) and, as a safety net, every 15 minutes.
 */
function openingCandidates(
  windows: readonly AvailabilityWindow[],
  timeZone: string,
  after: number,
  before: number,
): number[] {
  const candidates = windowStartInstants(windows, timeZone, after, before);
  for (const { at } of transitionsNear(timeZone, after + 1, before - 1)) candidates.push(at);
  const quarter = 15 * MINUTE;
  for (let ms = Math.floor(after / quarter) * quarter + quarter; ms < before; ms += quarter) {
    candidates.push(ms);
  }
  return candidates;
}

// ---------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------

const at = (iso: string) => new Date(iso);
const win = (dayOfWeek: DayOfWeek, start: string, end: string): AvailabilityWindow =>
  availabilityWindow.parse({ dayOfWeek, start, end });
const next = (windows: AvailabilityWindow[] | null, zone: string, from: string) =>
  nextWindowOpening(windows, zone, at(from))?.toISOString() ?? null;
const inside = (windows: AvailabilityWindow[] | null, zone: string, instant: string) =>
  isWithinWindows(windows, zone, at(instant));

describe('availabilityWindow schema', () => {
  it('accepts start < end and an end of 00:00:00 (end of day)', () => {
    expect(availabilityWindow.safeParse(win('Monday', '11:00:00', '15:00:00')).success).toBe(true);
    expect(
      availabilityWindow.safeParse({ dayOfWeek: 'Friday', start: '22:00:00', end: '00:00:00' })
        .success,
    ).toBe(true);
    expect(
      availabilityWindow.safeParse({ dayOfWeek: 'Friday', start: '00:00:00', end: '00:00:00' })
        .success,
    ).toBe(true);
  });

  it('rejects end <= start, bad times and bad days', () => {
    for (const bad of [
      { dayOfWeek: 'Monday', start: '15:00:00', end: '11:00:00' },
      { dayOfWeek: 'Monday', start: '11:00:00', end: '11:00:00' },
      { dayOfWeek: 'Monday', start: '11:00', end: '15:00:00' },
      { dayOfWeek: 'Monday', start: '11:00:00', end: '24:00:00' },
      { dayOfWeek: 'Monday', start: '11:60:00', end: '15:00:00' },
      { dayOfWeek: 'monday', start: '11:00:00', end: '15:00:00' },
      { dayOfWeek: 'Funday', start: '11:00:00', end: '15:00:00' },
    ]) {
      expect(availabilityWindow.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('null or empty availability never opens', () => {
  it.each([null, undefined, []])('%j', (windows) => {
    expect(isWithinWindows(windows, 'UTC', at('2026-06-01T12:00:00Z'))).toBe(false);
    expect(nextWindowOpening(windows, 'UTC', at('2026-06-01T12:00:00Z'))).toBeNull();
  });
});

describe('window edges (Asia/Kolkata, +05:30, no DST)', () => {
  const zone = 'Asia/Kolkata';
  // 2026-06-01 is a Monday. 09:00 IST = 03:30Z, 17:30 IST = 12:00Z.
  const windows = [win('Monday', '09:00:00', '17:30:00')];

  it('start is inclusive and end exclusive', () => {
    expect(inside(windows, zone, '2026-06-01T03:29:59.999Z')).toBe(false);
    expect(inside(windows, zone, '2026-06-01T03:30:00Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-01T11:59:59.999Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-01T12:00:00Z')).toBe(false);
  });

  it('opens at the start; from exactly at the start returns from', () => {
    // Monday 05:30 IST → opens 09:00 IST the same day.
    expect(next(windows, zone, '2026-06-01T00:00:00Z')).toBe('2026-06-01T03:30:00.000Z');
    const from = at('2026-06-01T03:30:00Z');
    expect(nextWindowOpening(windows, zone, from)?.getTime()).toBe(from.getTime());
    // Inside: from itself.
    expect(next(windows, zone, '2026-06-01T07:12:34.567Z')).toBe('2026-06-01T07:12:34.567Z');
  });

  it('from exactly at the end is closed: next week', () => {
    expect(next(windows, zone, '2026-06-01T12:00:00Z')).toBe('2026-06-08T03:30:00.000Z');
  });
});

describe('end 00:00:00 means end of day (Asia/Tokyo, +09:00)', () => {
  const zone = 'Asia/Tokyo';
  // Tuesday 2026-06-02 18:00 JST = 09:00Z; Wednesday 00:00 JST = 2026-06-02T15:00Z.
  const windows = [win('Tuesday', '18:00:00', '00:00:00')];

  it('is open until midnight and closed at midnight', () => {
    expect(inside(windows, zone, '2026-06-02T09:00:00Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-02T14:59:59Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-02T15:00:00Z')).toBe(false);
    // Tuesday 00:00-18:00 is closed (00:00:00 as end is not a start of the day).
    expect(inside(windows, zone, '2026-06-01T15:00:00Z')).toBe(false);
  });

  it('from midnight the next opening is next Tuesday 18:00 JST', () => {
    expect(next(windows, zone, '2026-06-02T15:00:00Z')).toBe('2026-06-09T09:00:00.000Z');
    expect(next(windows, zone, '2026-06-02T14:59:59Z')).toBe('2026-06-02T14:59:59.000Z');
  });
});

describe('overnight window as two entries (America/New_York, EDT −4)', () => {
  const zone = 'America/New_York';
  // Friday 2026-06-05 22:00 EDT = 06-06T02:00Z; midnight = 04:00Z; Saturday 02:00 = 06:00Z.
  const windows = [win('Friday', '22:00:00', '00:00:00'), win('Saturday', '00:00:00', '02:00:00')];

  it('is open across midnight', () => {
    expect(inside(windows, zone, '2026-06-06T01:59:59Z')).toBe(false);
    expect(inside(windows, zone, '2026-06-06T02:00:00Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-06T03:59:59Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-06T04:00:00Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-06T05:59:59Z')).toBe(true);
    expect(inside(windows, zone, '2026-06-06T06:00:00Z')).toBe(false);
  });

  it('next opening', () => {
    expect(next(windows, zone, '2026-06-06T01:00:00Z')).toBe('2026-06-06T02:00:00.000Z');
    expect(next(windows, zone, '2026-06-06T04:00:00Z')).toBe('2026-06-06T04:00:00.000Z');
    // Saturday 02:00 EDT: next Friday 2026-06-12 22:00 EDT = 06-13T02:00Z.
    expect(next(windows, zone, '2026-06-06T06:00:00Z')).toBe('2026-06-13T02:00:00.000Z');
  });
});

describe('America/Chicago', () => {
  const zone = 'America/Chicago';

  describe('spring forward 2026-03-08 02:00 CST (08:00Z) → 03:00 CDT', () => {
    it('a window starting in the gap opens at the transition', () => {
      const windows = [win('Sunday', '02:30:00', '04:00:00')];
      // From Sunday 00:00 CST (06:00Z): 02:30 does not exist; opens at 03:00 CDT = 08:00Z.
      expect(next(windows, zone, '2026-03-08T06:00:00Z')).toBe('2026-03-08T08:00:00.000Z');
      expect(inside(windows, zone, '2026-03-08T07:59:59Z')).toBe(false); // 01:59:59 CST
      expect(inside(windows, zone, '2026-03-08T08:00:00Z')).toBe(true); // 03:00 CDT
      expect(inside(windows, zone, '2026-03-08T08:59:59Z')).toBe(true); // 03:59:59 CDT
      expect(inside(windows, zone, '2026-03-08T09:00:00Z')).toBe(false); // 04:00 CDT
    });

    it('a window entirely in the gap is not open that day; opens the following Sunday', () => {
      const windows = [win('Sunday', '02:00:00', '02:30:00')];
      expect(inside(windows, zone, '2026-03-08T07:59:59Z')).toBe(false);
      expect(inside(windows, zone, '2026-03-08T08:00:00Z')).toBe(false);
      // 2026-03-15 02:00 CDT (−5) = 07:00Z.
      expect(next(windows, zone, '2026-03-08T06:00:00Z')).toBe('2026-03-15T07:00:00.000Z');
    });

    it('a window skipped this week is found next week, even from earlier in the week', () => {
      const windows = [win('Sunday', '02:00:00', '02:30:00')];
      expect(next(windows, zone, '2026-03-07T18:00:00Z')).toBe('2026-03-15T07:00:00.000Z');
    });
  });

  describe('fall back 2026-11-01 02:00 CDT (07:00Z) → 01:00 CST', () => {
    const windows = [win('Sunday', '01:30:00', '01:45:00')];

    it('the first occurrence of a repeated time counts', () => {
      // From 00:00 CDT (05:00Z): 01:30 CDT = 06:30Z.
      expect(next(windows, zone, '2026-11-01T05:00:00Z')).toBe('2026-11-01T06:30:00.000Z');
      expect(inside(windows, zone, '2026-11-01T06:30:00Z')).toBe(true); // 01:30 CDT
      expect(inside(windows, zone, '2026-11-01T06:45:00Z')).toBe(false); // 01:45 CDT
      expect(inside(windows, zone, '2026-11-01T07:00:00Z')).toBe(false); // 01:00 CST
    });

    it('the second occurrence is inside too', () => {
      expect(inside(windows, zone, '2026-11-01T07:30:00Z')).toBe(true); // 01:30 CST
      expect(inside(windows, zone, '2026-11-01T07:35:00Z')).toBe(true); // 01:35 CST
      expect(inside(windows, zone, '2026-11-01T07:45:00Z')).toBe(false); // 01:45 CST
      expect(next(windows, zone, '2026-11-01T07:35:00Z')).toBe('2026-11-01T07:35:00.000Z');
    });

    it('between the two occurrences, the second one is next', () => {
      expect(next(windows, zone, '2026-11-01T07:00:00Z')).toBe('2026-11-01T07:30:00.000Z');
      const longer = [win('Sunday', '01:30:00', '02:30:00')];
      expect(inside(longer, zone, '2026-11-01T07:05:00Z')).toBe(false); // 01:05 CST
      expect(next(longer, zone, '2026-11-01T07:05:00Z')).toBe('2026-11-01T07:30:00.000Z');
    });
  });
});

describe('Europe/London', () => {
  const zone = 'Europe/London';

  it('BST starts 2026-03-29 01:00 GMT (01:00Z) → 02:00 BST', () => {
    // Winter: Sunday 2026-03-22 09:00 GMT = 09:00Z; summer: 2026-03-29 09:00 BST = 08:00Z.
    const day = [win('Sunday', '09:00:00', '17:00:00')];
    expect(next(day, zone, '2026-03-22T00:00:00Z')).toBe('2026-03-22T09:00:00.000Z');
    expect(next(day, zone, '2026-03-29T00:00:00Z')).toBe('2026-03-29T08:00:00.000Z');
    expect(inside(day, zone, '2026-03-29T15:59:59Z')).toBe(true); // 16:59:59 BST
    expect(inside(day, zone, '2026-03-29T16:00:00Z')).toBe(false); // 17:00 BST
    // 01:15 does not exist that night: opens at 02:00 BST = 01:00Z.
    const gap = [win('Sunday', '01:15:00', '03:00:00')];
    expect(next(gap, zone, '2026-03-29T00:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    expect(inside(gap, zone, '2026-03-29T00:59:59Z')).toBe(false); // 00:59:59 GMT
    expect(inside(gap, zone, '2026-03-29T01:59:59Z')).toBe(true); // 02:59:59 BST
    expect(inside(gap, zone, '2026-03-29T02:00:00Z')).toBe(false); // 03:00 BST
  });

  it('BST ends 2026-10-25 02:00 BST (01:00Z) → 01:00 GMT', () => {
    // Saturday 13:00 BST → Sunday 09:00 GMT = 09:00Z.
    const day = [win('Sunday', '09:00:00', '17:00:00')];
    expect(next(day, zone, '2026-10-24T12:00:00Z')).toBe('2026-10-25T09:00:00.000Z');
    // 01:10 occurs twice: 00:10Z (BST) first, 01:10Z (GMT) second.
    const repeated = [win('Sunday', '01:10:00', '01:20:00')];
    expect(next(repeated, zone, '2026-10-25T00:00:00Z')).toBe('2026-10-25T00:10:00.000Z');
    expect(inside(repeated, zone, '2026-10-25T00:15:00Z')).toBe(true);
    expect(inside(repeated, zone, '2026-10-25T00:20:00Z')).toBe(false);
    expect(inside(repeated, zone, '2026-10-25T01:15:00Z')).toBe(true);
    expect(inside(repeated, zone, '2026-10-25T01:20:00Z')).toBe(false);
  });
});

describe('Australia/Lord_Howe (30-minute DST)', () => {
  const zone = 'Australia/Lord_Howe';

  it('2026-10-04 02:00 +10:30 (2026-10-03T15:30Z) → 02:30 +11', () => {
    // Sunday 00:00 +10:30 = 2026-10-03T13:30Z.
    const from = '2026-10-03T13:30:00Z';
    // 02:10 does not exist: opens at 02:30 +11 = 15:30Z.
    const gap = [win('Sunday', '02:10:00', '03:00:00')];
    expect(next(gap, zone, from)).toBe('2026-10-03T15:30:00.000Z');
    expect(inside(gap, zone, '2026-10-03T15:29:59Z')).toBe(false); // 01:59:59 +10:30
    expect(inside(gap, zone, '2026-10-03T15:30:00Z')).toBe(true); // 02:30 +11
    expect(inside(gap, zone, '2026-10-03T15:59:59Z')).toBe(true); // 02:59:59 +11
    expect(inside(gap, zone, '2026-10-03T16:00:00Z')).toBe(false); // 03:00 +11
    // 03:00 +11 = 16:00Z.
    expect(next([win('Sunday', '03:00:00', '04:00:00')], zone, from)).toBe(
      '2026-10-03T16:00:00.000Z',
    );
    // Entirely in the gap: next Sunday 2026-10-11 02:00 +11 = 2026-10-10T15:00Z.
    expect(next([win('Sunday', '02:00:00', '02:30:00')], zone, from)).toBe(
      '2026-10-10T15:00:00.000Z',
    );
  });

  it('2026-04-05 02:00 +11 (2026-04-04T15:00Z) → 01:30 +10:30', () => {
    const windows = [win('Sunday', '01:40:00', '01:50:00')];
    // From 01:00 +11 (14:00Z): first 01:40 is +11 = 14:40Z.
    expect(next(windows, zone, '2026-04-04T14:00:00Z')).toBe('2026-04-04T14:40:00.000Z');
    expect(inside(windows, zone, '2026-04-04T14:49:59Z')).toBe(true);
    expect(inside(windows, zone, '2026-04-04T14:50:00Z')).toBe(false);
    // Second 01:40 is +10:30 = 15:10Z.
    expect(inside(windows, zone, '2026-04-04T15:10:00Z')).toBe(true);
    expect(inside(windows, zone, '2026-04-04T15:20:00Z')).toBe(false);
  });
});

// Chile moves its clocks at local midnight. Confirm the 2026 rules with Intl first.
const santiago = 'America/Santiago';
const santiagoAsExpected =
  wall(santiago, Date.parse('2026-09-06T03:59:59Z')).weekday === 'Saturday' &&
  wall(santiago, Date.parse('2026-09-06T03:59:59Z')).seconds === 86_399 &&
  wall(santiago, Date.parse('2026-09-06T04:00:00Z')).weekday === 'Sunday' &&
  wall(santiago, Date.parse('2026-09-06T04:00:00Z')).seconds === 3_600 &&
  wall(santiago, Date.parse('2026-04-05T02:59:59Z')).seconds === 86_399 &&
  wall(santiago, Date.parse('2026-04-05T03:00:00Z')).weekday === 'Saturday' &&
  wall(santiago, Date.parse('2026-04-05T03:00:00Z')).seconds === 82_800;

describe.runIf(santiagoAsExpected)('America/Santiago (DST at midnight)', () => {
  it('2026-09-06 00:00 −04 (04:00Z) → 01:00 −03: Sunday starts at 01:00', () => {
    const saturdayNight = [win('Saturday', '22:00:00', '00:00:00')];
    // Saturday 22:00 −04 = 2026-09-06T02:00Z, closed at the end of Saturday (04:00Z).
    expect(next(saturdayNight, santiago, '2026-09-05T12:00:00Z')).toBe('2026-09-06T02:00:00.000Z');
    expect(inside(saturdayNight, santiago, '2026-09-06T03:59:59Z')).toBe(true);
    expect(inside(saturdayNight, santiago, '2026-09-06T04:00:00Z')).toBe(false);
    // Sunday 00:30 does not exist: opens at 01:00 −03 = 04:00Z.
    const sunday = [win('Sunday', '00:30:00', '02:00:00')];
    expect(next(sunday, santiago, '2026-09-06T03:00:00Z')).toBe('2026-09-06T04:00:00.000Z');
    expect(inside(sunday, santiago, '2026-09-06T04:59:59Z')).toBe(true); // 01:59:59 −03
    expect(inside(sunday, santiago, '2026-09-06T05:00:00Z')).toBe(false); // 02:00 −03
  });

  it('2026-04-05 00:00 −03 (03:00Z) → Saturday 23:00 −04: the first 23:30 counts', () => {
    const windows = [win('Saturday', '23:30:00', '00:00:00')];
    // From Saturday 23:00 −03 (02:00Z): first 23:30 is −03 = 02:30Z; open until Sunday
    // 00:00 −04 = 04:00Z, except for 03:00Z-03:30Z (23:00-23:30 −04).
    expect(next(windows, santiago, '2026-04-05T02:00:00Z')).toBe('2026-04-05T02:30:00.000Z');
    expect(inside(windows, santiago, '2026-04-05T02:59:59Z')).toBe(true);
    expect(inside(windows, santiago, '2026-04-05T03:00:00Z')).toBe(false);
    expect(inside(windows, santiago, '2026-04-05T03:30:00Z')).toBe(true);
    expect(inside(windows, santiago, '2026-04-05T03:59:59Z')).toBe(true);
    expect(inside(windows, santiago, '2026-04-05T04:00:00Z')).toBe(false);
  });

  it('the repeated 23:xx hour at midnight: the second 23:30 is next', () => {
    const windows = [win('Saturday', '23:30:00', '00:00:00')];
    expect(next(windows, santiago, '2026-04-05T03:00:00Z')).toBe('2026-04-05T03:30:00.000Z');
  });
});

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

const pad = (n: number) => String(n).padStart(2, '0');
/** Minutes since midnight → HH:mm:00; 1440 is the end of the day (00:00:00). */
const time = (minutes: number) =>
  minutes === 1_440 ? END_OF_DAY : `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}:00`;

const windowFrom = (
  dayArb: fc.Arbitrary<DayOfWeek>,
  startMin: number,
  startMax: number,
  maxLength: number,
) =>
  fc
    .tuple(dayArb, fc.integer({ min: startMin, max: startMax }))
    .chain(([day, start]) =>
      fc
        .integer({ min: start + 1, max: Math.min(1_440, start + maxLength) })
        .map((end) =>
          availabilityWindow.parse({ dayOfWeek: day, start: time(start), end: time(end) }),
        ),
    );

const windowArb: fc.Arbitrary<AvailabilityWindow> = fc.oneof(
  { weight: 3, arbitrary: windowFrom(fc.constantFrom(...DAYS), 0, 1_439, 1_440) },
  // Sunday small hours: where these zones change their clocks.
  { weight: 2, arbitrary: windowFrom(fc.constant('Sunday'), 0, 300, 180) },
);
const windowsArb = fc.array(windowArb, { maxLength: 6 });

const YEARS_FROM = Date.UTC(2025, 0, 1);
const YEARS_TO = Date.UTC(2029, 0, 1) - 1;

function instantArb(zone: Zone): fc.Arbitrary<number> {
  const uniform = fc.integer({ min: YEARS_FROM, max: YEARS_TO });
  const transitions = (TRANSITIONS.get(zone) ?? []).filter(
    ({ at }) => at >= YEARS_FROM && at <= YEARS_TO,
  );
  const raw =
    transitions.length === 0
      ? uniform
      : fc.oneof(
          uniform,
          fc
            .tuple(fc.constantFrom(...transitions), fc.integer({ min: -3 * HOUR, max: 3 * HOUR }))
            .map(([{ at }, delta]) => at + delta),
        );
  // Whole minutes sometimes, to land exactly on window edges.
  return fc
    .tuple(raw, fc.boolean())
    .map(([ms, whole]) => (whole ? Math.floor(ms / MINUTE) * MINUTE : ms));
}

const caseArb = fc
  .constantFrom(...ZONES)
  .chain((zone) =>
    fc.record({ zone: fc.constant(zone), from: instantArb(zone), windows: windowsArb }),
  );

const RUNS = { numRuns: 200 };

describe('properties', () => {
  it('finds DST transitions for the zones that have them (sanity of the oracle)', () => {
    // Chicago 2026: 2026-03-08T08:00Z forward an hour, 2026-11-01T07:00Z back.
    const chicago2026 = (TRANSITIONS.get('America/Chicago') ?? []).filter(
      ({ at }) => new Date(at).getUTCFullYear() === 2026,
    );
    expect(chicago2026.map(({ at }) => new Date(at).toISOString())).toEqual([
      '2026-03-08T08:00:00.000Z',
      '2026-11-01T07:00:00.000Z',
    ]);
    expect(TRANSITIONS.get('Australia/Lord_Howe')).toContainEqual({
      at: Date.parse('2026-10-03T15:30:00Z'),
      before: 630 * MINUTE,
      after: 660 * MINUTE,
    });
    for (const zone of ['Asia/Kolkata', 'Asia/Tokyo', 'UTC', 'America/Sao_Paulo']) {
      expect(TRANSITIONS.get(zone), zone).toEqual([]);
    }
  });

  it('isWithinWindows agrees with the Intl oracle', () => {
    fc.assert(
      fc.property(caseArb, ({ zone, from, windows }) => {
        // The instant itself, plus every window edge near it and one second either side.
        const edges = windowStartInstants(
          windows.flatMap((window) => [
            window,
            // An end is the start of a window on the same day (the next day for 00:00:00).
            window.end === END_OF_DAY
              ? {
                  ...window,
                  dayOfWeek: DAYS[(DAYS.indexOf(window.dayOfWeek) + 1) % 7] ?? 'Sunday',
                  start: END_OF_DAY,
                }
              : { ...window, start: window.end },
          ]),
          zone,
          from - DAY,
          from + DAY,
        );
        for (const { at } of transitionsNear(zone, from - DAY, from + DAY)) edges.push(at);
        for (const ms of [from, ...edges.flatMap((edge) => [edge - SECOND, edge, edge + SECOND])]) {
          expect(isWithinWindows(windows, zone, new Date(ms)), new Date(ms).toISOString()).toBe(
            oracleInside(windows, zone, ms),
          );
        }
      }),
      RUNS,
    );
  });

  it('nextWindowOpening returns the first opening edge at or after from', () => {
    fc.assert(
      fc.property(caseArb, ({ zone, from, windows }) => {
        const result = nextWindowOpening(windows, zone, new Date(from));
        if (result === null) return;
        const t = result.getTime();
        expect(t).toBeGreaterThanOrEqual(from);
        expect(isWithinWindows(windows, zone, result)).toBe(true);
        expect(oracleInside(windows, zone, t)).toBe(true);
        if (t !== from) {
          expect(oracleInside(windows, zone, from)).toBe(false);
          if (t - SECOND >= from) expect(oracleInside(windows, zone, t - SECOND)).toBe(false);
          const earlier = openingCandidates(windows, zone, from, t).filter((ms) =>
            oracleInside(windows, zone, ms),
          );
          expect(earlier.map((ms) => new Date(ms).toISOString())).toEqual([]);
        }
      }),
      RUNS,
    );
  });

  it('non-empty windows always open again', () => {
    fc.assert(
      fc.property(caseArb, ({ zone, from, windows }) => {
        fc.pre(windows.length > 0);
        expect(nextWindowOpening(windows, zone, new Date(from))).not.toBeNull();
      }),
      RUNS,
    );
  });

  it('nextWindowOpening is idempotent', () => {
    fc.assert(
      fc.property(caseArb, ({ zone, from, windows }) => {
        const first = nextWindowOpening(windows, zone, new Date(from));
        if (first === null) return;
        expect(nextWindowOpening(windows, zone, first)?.getTime()).toBe(first.getTime());
      }),
      RUNS,
    );
  });
});
