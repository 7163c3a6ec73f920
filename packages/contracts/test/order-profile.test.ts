import { describe, expect, it } from 'vitest';
import { deliveryReach, distanceMeters, EARTH_RADIUS_METERS } from '../src/order-profile.js';
import type { MarketfrontStore } from '../src/stores.js';

const WACKER = { latitude: 41.8789, longitude: -87.6359 };
const ZIP_60601 = { latitude: 41.8858, longitude: -87.6181 };
const north = (from: typeof WACKER, meters: number) => ({
  latitude: from.latitude + meters / ((Math.PI * EARTH_RADIUS_METERS) / 180),
  longitude: from.longitude,
});

type Reachable = Pick<MarketfrontStore, 'fulfillmentTypes' | 'address' | 'delivery'>;
const store = (overrides: Partial<Reachable> = {}): Reachable => ({
  fulfillmentTypes: ['PICKUP', 'DELIVERY_BY_MERCHANT'],
  address: {
    address1: '1 N Wacker Dr',
    address2: null,
    city: 'Chicago',
    state: 'IL',
    postalCode: '60606',
    country: 'US',
    ...WACKER,
  },
  delivery: {
    radiusMeters: 5_000,
    fee: 2.99,
    minimumOrder: 10,
    etaMinutes: 30,
  },
  ...overrides,
});

describe('deliveryReach', () => {
  it('delivers within the radius, in whole meters', () => {
    expect(deliveryReach(store(), north(WACKER, 4_900))).toEqual({
      deliverable: true,
      distanceMeters: 4_900,
      radiusMeters: 5_000,
    });
    expect(deliveryReach(store(), north(WACKER, 5_000)).deliverable).toBe(true);
    const downtown = deliveryReach(store(), ZIP_60601);
    expect(downtown.deliverable).toBe(true);
    expect(Number.isInteger(downtown.distanceMeters)).toBe(true);
    expect(Math.abs(downtown.distanceMeters - distanceMeters(ZIP_60601, WACKER))).toBeLessThan(1);
  });

  it('does not deliver outside the radius, nor from a pickup-only store', () => {
    expect(deliveryReach(store(), north(WACKER, 5_100))).toEqual({
      deliverable: false,
      distanceMeters: 5_100,
      radiusMeters: 5_000,
    });
    const newYork = deliveryReach(store(), { latitude: 40.7484, longitude: -73.9967 });
    expect(newYork.deliverable).toBe(false);
    expect(newYork.distanceMeters).toBeGreaterThan(1_000_000);
    expect(deliveryReach(store({ fulfillmentTypes: ['PICKUP'], delivery: null }), WACKER)).toEqual({
      deliverable: false,
      distanceMeters: 0,
      radiusMeters: null,
    });
    // A radius alone does not deliver: the store must offer delivery.
    expect(deliveryReach(store({ fulfillmentTypes: ['PICKUP'] }), WACKER).deliverable).toBe(false);
  });
});
