import { describe, expect, it } from 'vitest';
import { changeProblems, endOfLocalDay } from '../../src/domain/item-availability.js';

const now = new Date('2026-11-22T12:00:00.000Z');
const item = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('changeProblems', () => {
  it('accepts overrides until a future instant up to 366 days ahead, until cleared, and clears', () => {
    expect(
      changeProblems(
        [
          { itemId: item(1), available: false, until: '2027-11-23T12:00:00.000Z' },
          { itemId: item(2), available: false, until: null },
          { itemId: item(3), available: false },
          { itemId: item(4), available: true },
        ],
        now,
      ),
    ).toEqual([]);
  });

  it('names each bad entry once: a repeated item, an until past, now, 367 days ahead, on a clear', () => {
    const problems = changeProblems(
      [
        { itemId: item(1), available: false, until: '2026-11-22T11:59:59.999Z' },
        { itemId: item(2), available: false, until: now.toISOString() },
        { itemId: item(3), available: false, until: '2027-11-23T12:00:00.001Z' },
        { itemId: item(4), available: true, until: '2026-11-23T00:00:00Z' },
        { itemId: item(1), available: true },
      ],
      now,
    );
    expect(problems.map((problem) => problem.pointer)).toEqual([
      '/items/0/until',
      '/items/1/until',
      '/items/2/until',
      '/items/3/until',
      '/items/4/itemId',
    ]);
  });
});

describe('endOfLocalDay', () => {
  it('is the next local midnight, across both DST changes and in zones east of UTC', () => {
    expect(endOfLocalDay(new Date('2026-11-01T12:00:00Z'), 'America/Chicago').toISOString()).toBe(
      '2026-11-02T06:00:00.000Z',
    );
    expect(endOfLocalDay(new Date('2026-03-08T07:59:59Z'), 'America/Chicago').toISOString()).toBe(
      '2026-03-09T05:00:00.000Z',
    );
    // Just after local midnight: the whole local day.
    expect(endOfLocalDay(new Date('2026-11-22T06:00:00Z'), 'America/Chicago').toISOString()).toBe(
      '2026-11-23T06:00:00.000Z',
    );
    expect(endOfLocalDay(new Date('2026-11-22T23:30:00Z'), 'Asia/Tokyo').toISOString()).toBe(
      '2026-11-23T15:00:00.000Z',
    );
  });
});
