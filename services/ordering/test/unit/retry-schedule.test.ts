import { describe, expect, it } from 'vitest';
import {
  CONTRACT_RETRY_SCHEDULE_MS,
  nextRetryDelay,
  parseRetryAfter,
  parseRetrySchedule,
} from '../../src/webhooks/retry-schedule.js';

const HOUR = 3_600_000;

describe('the retry schedule', () => {
  it('is the contract’s: at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(CONTRACT_RETRY_SCHEDULE_MS).toEqual([
      0,
      5_000,
      300_000,
      1_800_000,
      2 * HOUR,
      5 * HOUR,
      10 * HOUR,
      10 * HOUR,
    ]);
  });

  it('gives the next step after each failed try, then nothing (dead)', () => {
    const middle = () => 0.5;
    expect(nextRetryDelay(CONTRACT_RETRY_SCHEDULE_MS, 1, undefined, middle)).toBe(5_000);
    expect(nextRetryDelay(CONTRACT_RETRY_SCHEDULE_MS, 7, undefined, middle)).toBe(10 * HOUR);
    expect(nextRetryDelay(CONTRACT_RETRY_SCHEDULE_MS, 8, undefined, middle)).toBeUndefined();
  });

  it('jitters each step within ±20%', () => {
    expect(nextRetryDelay([0, 10_000], 1, undefined, () => 0)).toBe(8_000);
    expect(nextRetryDelay([0, 10_000], 1, undefined, () => 0.999999)).toBe(12_000);
    const draws = new Set(
      Array.from({ length: 50 }, () => nextRetryDelay([0, 10_000], 1, undefined)),
    );
    expect(draws.size).toBeGreaterThan(10);
    for (const delay of draws) {
      expect(delay).toBeGreaterThanOrEqual(8_000);
      expect(delay).toBeLessThanOrEqual(12_000);
    }
  });

  it('waits at least as long as Retry-After asks, up to a day', () => {
    const middle = () => 0.5;
    expect(nextRetryDelay([0, 5_000], 1, 60_000, middle)).toBe(60_000);
    expect(nextRetryDelay([0, 5_000], 1, 1_000, middle)).toBe(5_000);
    expect(nextRetryDelay([0, 5_000], 1, 90 * 24 * HOUR, middle)).toBe(24 * HOUR);
    // A spent schedule stays spent whatever the endpoint asks.
    expect(nextRetryDelay([0, 5_000], 2, 1_000, middle)).toBeUndefined();
  });

  it('parses a configured schedule and refuses nonsense', () => {
    expect(parseRetrySchedule('0, 200,400')).toEqual([0, 200, 400]);
    for (const bad of ['', 'a', '0,-1', '0,1.5', '0,,1', String(8 * 24 * HOUR), '1,'.repeat(51)]) {
      expect(() => parseRetrySchedule(bad), bad).toThrow();
    }
  });
});

describe('Retry-After', () => {
  const now = new Date('2026-11-23T12:00:00Z');

  it('reads delta-seconds and HTTP-dates', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Mon, 23 Nov 2026 12:01:30 GMT', now)).toBe(90_000);
    // A date in the past means now.
    expect(parseRetryAfter('Mon, 23 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    for (const value of [undefined, '', 'soon', '-5', '1.5', '99999999999999']) {
      expect(parseRetryAfter(value, now), String(value)).toBeUndefined();
    }
  });
});
