import {
  availabilityWindow,
  isWithinHours,
  localDateOf,
  nextHoursOpening,
  specialDays,
  specialHours,
  type AvailabilityWindow,
  type DayOfWeek,
  type OpeningHours,
  type SpecialDay,
} from '@pcp/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const CHICAGO = 'America/Chicago';
const DAYS: DayOfWeek[] = [
  'Sunday',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
];
const MINUTE = 60_000;
const DAY = 86_400_000;

/** The same window on every day of the week. */
const daily = (start: string, end: string): AvailabilityWindow[] =>
  DAYS.map((dayOfWeek) => availabilityWindow.parse({ dayOfWeek, start, end }));

const inside = (hours: OpeningHours, iso: string, zone = CHICAGO) =>
  isWithinHours(hours, zone, new Date(iso));
const next = (hours: OpeningHours, iso: string, zone = CHICAGO) =>
  nextHoursOpening(hours, zone, new Date(iso))?.toISOString() ?? null;

/** Consecutive closed days from `first` (YYYY-MM-DD). */
function closedRun(first: string, count: number): SpecialDay[] {
  const start = Date.parse(`${first}T00:00:00Z`);
  return Array.from({ length: count }, (_, index) => ({
    date: new Date(start + index * DAY).toISOString().slice(0, 10),
    closed: true as const,
  }));
}

describe('special days replace the weekly hours on their dates (America/Chicago)', () => {
  const weekly = daily('10:00:00', '20:00:00');

  it('a closed date is closed all its local day, and only that day', () => {
    const hours = { windows: weekly, specialDays: [{ date: '2026-12-25', closed: true as const }] };
    // 2026-12-25 12:00 CST = 18:00Z; the 24th and 26th keep their weekly hours.
    expect(inside(hours, '2026-12-25T18:00:00Z')).toBe(false);
    expect(inside(hours, '2026-12-24T18:00:00Z')).toBe(true);
    expect(inside(hours, '2026-12-26T18:00:00Z')).toBe(true);
    // From the 24th at 20:00 CST (02:00Z on the 25th): the 26th at 10:00 CST = 16:00Z.
    expect(next(hours, '2026-12-25T02:00:00Z')).toBe('2026-12-26T16:00:00.000Z');
  });

  it('a date with its own windows opens in them only', () => {
    const hours = {
      windows: weekly,
      specialDays: [
        {
          date: '2026-12-24',
          windows: [
            { start: '07:00:00', end: '09:00:00' },
            { start: '12:00:00', end: '14:00:00' },
          ],
        },
      ],
    };
    expect(inside(hours, '2026-12-24T13:00:00Z')).toBe(true); // 07:00 CST
    expect(inside(hours, '2026-12-24T15:00:00Z')).toBe(false); // 09:00 CST
    expect(inside(hours, '2026-12-24T17:30:00Z')).toBe(false); // 11:30 CST, weekly open
    expect(next(hours, '2026-12-24T15:00:00Z')).toBe('2026-12-24T18:00:00.000Z');
    expect(inside(hours, '2026-12-24T19:59:59Z')).toBe(true); // 13:59:59 CST
    expect(inside(hours, '2026-12-24T20:00:00Z')).toBe(false); // 14:00 CST, weekly open
    // Then the 25th's weekly 10:00 CST.
    expect(next(hours, '2026-12-24T20:00:00Z')).toBe('2026-12-25T16:00:00.000Z');
  });

  it('an end of 00:00:00 closes the special day at its midnight, where the next day rules', () => {
    const hours = {
      windows: [],
      specialDays: [{ date: '2026-12-31', windows: [{ start: '18:00:00', end: '00:00:00' }] }],
    };
    expect(inside(hours, '2027-01-01T05:59:59Z')).toBe(true); // 23:59:59 CST
    expect(inside(hours, '2027-01-01T06:00:00Z')).toBe(false); // 00:00 CST on the 1st
    expect(next(hours, '2027-01-01T06:00:00Z')).toBeNull();
  });

  it('a store without weekly hours opens on its special days only', () => {
    const hours = {
      windows: null,
      specialDays: [{ date: '2027-06-01', windows: [{ start: '09:00:00', end: '10:00:00' }] }],
    };
    // 200 days ahead: 2027-06-01 09:00 CDT = 14:00Z.
    expect(next(hours, '2026-11-13T12:00:00Z')).toBe('2027-06-01T14:00:00.000Z');
    expect(next(hours, '2027-06-01T15:00:00Z')).toBeNull();
  });
});

describe('daylight-saving changes on special days (America/Chicago)', () => {
  const weekly = daily('10:00:00', '20:00:00');

  describe('spring forward 2026-03-08 02:00 CST (08:00Z) → 03:00 CDT', () => {
    it('a special day across the gap is open on both sides of it', () => {
      const hours = {
        windows: weekly,
        specialDays: [{ date: '2026-03-08', windows: [{ start: '01:00:00', end: '04:00:00' }] }],
      };
      expect(inside(hours, '2026-03-08T06:59:59Z')).toBe(false); // 00:59:59 CST
      expect(inside(hours, '2026-03-08T07:00:00Z')).toBe(true); // 01:00 CST
      expect(inside(hours, '2026-03-08T08:00:00Z')).toBe(true); // 03:00 CDT
      expect(inside(hours, '2026-03-08T08:59:59Z')).toBe(true); // 03:59:59 CDT
      expect(inside(hours, '2026-03-08T09:00:00Z')).toBe(false); // 04:00 CDT
      // 11:00 CDT: the weekly hours do not apply on the special date.
      expect(inside(hours, '2026-03-08T16:00:00Z')).toBe(false);
      // Then Monday 10:00 CDT = 15:00Z.
      expect(next(hours, '2026-03-08T09:00:00Z')).toBe('2026-03-09T15:00:00.000Z');
    });

    it('a special window starting in the gap opens at the transition', () => {
      const hours = {
        windows: weekly,
        specialDays: [{ date: '2026-03-08', windows: [{ start: '02:15:00', end: '03:30:00' }] }],
      };
      expect(next(hours, '2026-03-08T06:00:00Z')).toBe('2026-03-08T08:00:00.000Z');
      expect(inside(hours, '2026-03-08T08:29:59Z')).toBe(true); // 03:29:59 CDT
      expect(inside(hours, '2026-03-08T08:30:00Z')).toBe(false); // 03:30 CDT
    });

    it('a special window entirely in the gap never opens; the next day’s hours do', () => {
      const hours = {
        windows: weekly,
        specialDays: [{ date: '2026-03-08', windows: [{ start: '02:00:00', end: '02:45:00' }] }],
      };
      expect(inside(hours, '2026-03-08T08:00:00Z')).toBe(false);
      expect(next(hours, '2026-03-08T06:00:00Z')).toBe('2026-03-09T15:00:00.000Z');
    });

    it('a closed special day before the change keeps the weekly hours after it', () => {
      const hours = { windows: weekly, specialDays: closedRun('2026-03-07', 1) };
      // Saturday closed; Sunday 10:00 CDT (after the change) = 15:00Z.
      expect(next(hours, '2026-03-07T12:00:00Z')).toBe('2026-03-08T15:00:00.000Z');
    });
  });

  describe('fall back 2026-11-01 02:00 CDT (07:00Z) → 01:00 CST', () => {
    it('a special window in the repeated hour is open in both of its occurrences', () => {
      const hours = {
        windows: weekly,
        specialDays: [{ date: '2026-11-01', windows: [{ start: '01:00:00', end: '01:30:00' }] }],
      };
      expect(next(hours, '2026-11-01T05:00:00Z')).toBe('2026-11-01T06:00:00.000Z'); // 01:00 CDT
      expect(inside(hours, '2026-11-01T06:29:59Z')).toBe(true);
      expect(inside(hours, '2026-11-01T06:30:00Z')).toBe(false); // 01:30 CDT
      expect(next(hours, '2026-11-01T06:30:00Z')).toBe('2026-11-01T07:00:00.000Z'); // 01:00 CST
      expect(inside(hours, '2026-11-01T07:29:59Z')).toBe(true);
      expect(inside(hours, '2026-11-01T07:30:00Z')).toBe(false);
      // Then Monday 10:00 CST = 16:00Z.
      expect(next(hours, '2026-11-01T07:30:00Z')).toBe('2026-11-02T16:00:00.000Z');
    });

    it('the special day spans its 25 hours: a closed day starts and ends at local midnights', () => {
      const hours = {
        windows: daily('00:00:00', '00:00:00'),
        specialDays: closedRun('2026-11-01', 1),
      };
      // Open all week, closed from Sunday 00:00 CDT (05:00Z) to Monday 00:00 CST (06:00Z).
      expect(inside(hours, '2026-11-01T04:59:59Z')).toBe(true);
      expect(inside(hours, '2026-11-01T05:00:00Z')).toBe(false);
      expect(inside(hours, '2026-11-02T05:59:59Z')).toBe(false);
      expect(next(hours, '2026-11-01T05:00:00Z')).toBe('2026-11-02T06:00:00.000Z');
    });
  });
});

describe('nextHoursOpening searches past long closed runs', () => {
  const weekly = daily('08:00:00', '22:00:00');

  it('40 closed days (longer than the 15 days weekly hours need)', () => {
    const hours = { windows: weekly, specialDays: closedRun('2026-12-01', 40) };
    // Closed 2026-12-01 .. 2027-01-09: opens 2027-01-10 08:00 CST = 14:00Z.
    expect(next(hours, '2026-12-01T06:00:00Z')).toBe('2027-01-10T14:00:00.000Z');
  });

  it('366 closed days, then the weekly hours', () => {
    const hours = { windows: weekly, specialDays: closedRun('2027-01-01', 366) };
    // Closed 2027-01-01 .. 2028-01-01: opens 2028-01-02 08:00 CST = 14:00Z.
    expect(next(hours, '2027-01-01T06:00:00Z')).toBe('2028-01-02T14:00:00.000Z');
  });

  it('never, when the weekly hours are empty and every special day is closed', () => {
    expect(
      next({ windows: [], specialDays: closedRun('2027-01-01', 366) }, '2027-01-01T06:00:00Z'),
    ).toBeNull();
  });
});

describe('nextHoursOpening without weekly hours', () => {
  it('jumps to special days however far ahead, at a cost bounded by the special days', () => {
    const far = closedRun('9998-01-01', 365).map((day, index) =>
      index === 364 ? { date: day.date, windows: [{ start: '09:00:00', end: '10:00:00' }] } : day,
    );
    const hours = { windows: [], specialDays: far };
    const started = performance.now();
    for (let call = 0; call < 100; call++) {
      // 9998-12-31 09:00 CST = 15:00Z.
      expect(next(hours, '2026-12-01T12:00:00Z')).toBe('9998-12-31T15:00:00.000Z');
    }
    // Walking day by day to year 9998 would take seconds for these 100 calls.
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('localDateOf', () => {
  it('reads the date of the local wall clock, across the fall-back hour', () => {
    expect(localDateOf(CHICAGO, new Date('2026-11-01T04:59:59Z'))).toBe('2026-10-31');
    expect(localDateOf(CHICAGO, new Date('2026-11-01T05:00:00Z'))).toBe('2026-11-01');
    expect(localDateOf(CHICAGO, new Date('2026-11-02T05:59:59Z'))).toBe('2026-11-01');
    expect(localDateOf('Pacific/Auckland', new Date('2026-12-31T11:00:00Z'))).toBe('2027-01-01');
  });
});

describe('specialHours schema', () => {
  it('refuses 367 days, duplicate dates, overlapping windows and unknown fields', () => {
    expect(specialDays.safeParse(closedRun('2027-01-01', 366)).success).toBe(true);
    expect(specialDays.safeParse(closedRun('2027-01-01', 367)).success).toBe(false);
    const duplicate = specialDays.safeParse([
      ...closedRun('2027-01-01', 1),
      ...closedRun('2027-01-01', 1),
    ]);
    expect(duplicate.error?.issues.map((issue) => issue.path)).toEqual([[1, 'date']]);
    const overlapping = specialDays.safeParse([
      {
        date: '2027-01-02',
        windows: [
          { start: '12:00:00', end: '15:00:00' },
          { start: '08:00:00', end: '12:30:00' },
        ],
      },
    ]);
    expect(overlapping.error?.issues.map((issue) => issue.path)).toEqual([
      [0, 'windows', 0, 'start'],
    ]);
    for (const bad of [
      { date: '2027-02-29', closed: true },
      { date: '2027-01-03', closed: false },
      { date: '2027-01-03', closed: true, windows: [] },
      { date: '2027-01-03', windows: [] },
      { date: '2027-01-03', windows: [{ start: '10:00:00', end: '09:00:00' }] },
    ]) {
      expect(specialHours.safeParse({ days: [bad] }).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

// An independent oracle: the wall clock from Intl (no luxon), the special day by its date.
const wallFormat = new Intl.DateTimeFormat('en-US', {
  timeZone: CHICAGO,
  weekday: 'long',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

function oracleInside(hours: OpeningHours, millis: number): boolean {
  const parts: Record<string, string> = {};
  for (const part of wallFormat.formatToParts(new Date(millis))) parts[part.type] = part.value;
  const date = `${parts.year}-${parts.month}-${parts.day}`;
  const seconds = Number(parts.hour) * 3_600 + Number(parts.minute) * 60 + Number(parts.second);
  const toSeconds = (time: string) => {
    const [h = 0, m = 0, s = 0] = time.split(':').map(Number);
    return h * 3_600 + m * 60 + s;
  };
  const special = hours.specialDays?.find((day) => day.date === date);
  const windows = special
    ? 'closed' in special
      ? []
      : special.windows
    : (hours.windows ?? []).filter((window) => window.dayOfWeek === parts.weekday);
  return windows.some(
    (window) =>
      seconds >= toSeconds(window.start) &&
      seconds < (window.end === '00:00:00' ? 86_400 : toSeconds(window.end)),
  );
}

describe('properties against the Intl oracle, around the 2026 changes (America/Chicago)', () => {
  const pad = (n: number) => String(n).padStart(2, '0');
  /** Quarter hours since midnight → HH:mm:00 (96 is the end of the day). */
  const time = (quarters: number) =>
    quarters === 96
      ? '00:00:00'
      : `${pad(Math.floor(quarters / 4))}:${pad((quarters % 4) * 15)}:00`;
  const windowArb = fc
    .integer({ min: 0, max: 95 })
    .chain((start) => fc.integer({ min: start + 1, max: 96 }).map((end) => ({ start, end })));
  const dayWindowsArb = fc.array(windowArb, { minLength: 1, maxLength: 3 }).map((windows) => {
    // Keep the windows that start after the previous kept one ends (no overlap).
    const kept: { start: number; end: number }[] = [];
    for (const window of windows.sort((a, b) => a.start - b.start)) {
      if (kept.length === 0 || window.start >= kept[kept.length - 1]!.end) kept.push(window);
    }
    return kept.map((window) => ({ start: time(window.start), end: time(window.end) }));
  });
  const TRANSITIONS = [Date.parse('2026-03-08T08:00:00Z'), Date.parse('2026-11-01T07:00:00Z')];
  const caseArb = fc.record({
    transition: fc.constantFrom(...TRANSITIONS),
    fromQuarter: fc.integer({ min: -4 * 24 * 3, max: 4 * 24 * 3 }),
    weekly: fc.array(
      fc
        .tuple(fc.constantFrom(...DAYS), windowArb)
        .map(([dayOfWeek, window]) =>
          availabilityWindow.parse({ dayOfWeek, start: time(window.start), end: time(window.end) }),
        ),
      { maxLength: 4 },
    ),
    special: fc.array(
      fc.tuple(fc.integer({ min: -4, max: 20 }), fc.option(dayWindowsArb, { nil: undefined })),
      { maxLength: 10 },
    ),
  });

  it('isWithinHours and nextHoursOpening agree with it, to the quarter hour', () => {
    fc.assert(
      fc.property(caseArb, ({ transition, fromQuarter, weekly, special }) => {
        const from = transition + fromQuarter * 15 * MINUTE;
        const seen = new Set<string>();
        const days: SpecialDay[] = [];
        for (const [offset, windows] of special) {
          const date = new Date(transition + offset * DAY).toISOString().slice(0, 10);
          if (seen.has(date)) continue;
          seen.add(date);
          days.push(windows ? { date, windows } : { date, closed: true });
        }
        const hours = { windows: weekly, specialDays: specialDays.parse(days) };
        const result = nextHoursOpening(hours, CHICAGO, new Date(from));
        // Chicago's offsets are whole hours, so every opening is on a quarter hour: each quarter
        // hour before the result (within a week) is closed, and the result is open.
        const until = Math.min(result?.getTime() ?? Infinity, from + 7 * DAY);
        for (let millis = from; millis < until; millis += 15 * MINUTE) {
          expect(isWithinHours(hours, CHICAGO, new Date(millis))).toBe(oracleInside(hours, millis));
          expect(oracleInside(hours, millis), new Date(millis).toISOString()).toBe(false);
        }
        if (result !== null) {
          expect(oracleInside(hours, result.getTime())).toBe(true);
          expect(isWithinHours(hours, CHICAGO, result)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });
});
