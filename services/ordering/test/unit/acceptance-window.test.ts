import { describe, expect, it } from 'vitest';
import { orderingEnvSchema } from '../../src/config.js';
import {
  acceptanceEnded,
  acceptByOf,
  estimatedReadyAtOf,
  storeTiming,
} from '../../src/lifecycle/acceptance-window.js';

const store = {
  acceptanceWindowSeconds: 120,
  pickup: { etaMinutes: 15 },
  delivery: { radiusMeters: 5_000, fee: 2.99, minimumOrder: 15, etaMinutes: 40 },
  status: 'online' as const,
  extraPrepMinutes: null,
};
const placedAt = new Date('2026-11-01T06:30:00Z');

describe('storeTiming', () => {
  it('takes the fulfillment’s ETA and the window', () => {
    expect(storeTiming(store, 'PICKUP')).toEqual({ acceptanceWindowSeconds: 120, prepMinutes: 15 });
    expect(storeTiming(store, 'DELIVERY_BY_MERCHANT')).toEqual({
      acceptanceWindowSeconds: 120,
      prepMinutes: 40,
    });
  });

  it('adds a busy store’s extra minutes, and only while busy', () => {
    const busy = { ...store, status: 'busy' as const, extraPrepMinutes: 20 };
    expect(storeTiming(busy, 'PICKUP').prepMinutes).toBe(35);
    expect(storeTiming(busy, 'DELIVERY_BY_MERCHANT').prepMinutes).toBe(60);
    // A stale extraPrepMinutes on a store no longer busy adds nothing.
    expect(storeTiming({ ...busy, status: 'online' }, 'PICKUP').prepMinutes).toBe(15);
  });
});

describe('acceptByOf', () => {
  it('is placement plus the window, none when the store’s URL took the order', () => {
    const timing = storeTiming(store, 'PICKUP');
    expect(acceptByOf(placedAt, timing, false)).toEqual(new Date('2026-11-01T06:32:00Z'));
    expect(acceptByOf(placedAt, timing, true)).toBeNull();
  });

  it('gives a snapshot from before the window the default 600 s', () => {
    expect(acceptByOf(placedAt, undefined, false)).toEqual(new Date('2026-11-01T06:40:00Z'));
  });
});

describe('estimatedReadyAtOf', () => {
  it('dates an ASAP order from placement in absolute time (across a DST change)', () => {
    // 01:30 CDT on the day Chicago falls back: 15 minutes later in UTC, whatever the wall says.
    const asap = { scheduleType: 'ASAP' as const, scheduledTime: null };
    expect(estimatedReadyAtOf(placedAt, asap, { prepMinutes: 15 })).toEqual(
      new Date('2026-11-01T06:45:00Z'),
    );
    expect(estimatedReadyAtOf(placedAt, asap, undefined)).toBeNull();
  });

  it('gives a scheduled order its scheduled time', () => {
    const scheduled = { scheduleType: 'SCHEDULED' as const, scheduledTime: '2026-11-01T18:00:00Z' };
    expect(estimatedReadyAtOf(placedAt, scheduled, { prepMinutes: 15 })).toEqual(
      new Date('2026-11-01T18:00:00Z'),
    );
  });
});

describe('acceptanceEnded', () => {
  const acceptBy = new Date('2026-11-01T06:40:00Z');
  it('ends at the deadline itself, for pending orders only', () => {
    expect(acceptanceEnded({ status: 'pending', acceptBy }, new Date(acceptBy.getTime() - 1))).toBe(
      false,
    );
    expect(acceptanceEnded({ status: 'pending', acceptBy }, acceptBy)).toBe(true);
    expect(acceptanceEnded({ status: 'confirmed', acceptBy }, acceptBy)).toBe(false);
    expect(acceptanceEnded({ status: 'pending', acceptBy: null }, acceptBy)).toBe(false);
  });
});

describe('the acceptance settings', () => {
  it('refuse the test-only window in production, and sweep intervals out of bounds', () => {
    const parse = (env: Record<string, string>) => orderingEnvSchema.safeParse(env).success;
    expect(parse({ ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS: '3' })).toBe(true);
    expect(parse({ NODE_ENV: 'production', ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS: '3' })).toBe(
      false,
    );
    expect(parse({ ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS: '0' })).toBe(false);
    expect(parse({ ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '99' })).toBe(false);
    expect(parse({ ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '60001' })).toBe(false);
    expect(orderingEnvSchema.parse({}).ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS).toBe(5_000);
  });
});
