import { setRateLimits } from '@pcp/gateway/admin';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { alwaysOpen, newStoreId, storeProfile } from '@pcp/testing/fixtures';
import { call, type HttpResult } from './http.js';

let env: TestEnvironment;
let platform: TestPlatform;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
  // Before the key's first use, so the gateway's auth cache never holds the default.
  await setRateLimits(platform.gatewayDb, distribution.partnerId, { discovery: 100_000 });
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

const DISCOVER = '/v1/marketfront/stores/discover';

interface Point {
  latitude: number;
  longitude: number;
}

/** The sphere the service measures on (geo.ts): the IUGG mean Earth radius. */
const EARTH_RADIUS_METERS = 6_371_008.8;
const METERS_PER_DEGREE_LATITUDE = (Math.PI * EARTH_RADIUS_METERS) / 180;
const toRadians = (degrees: number) => (degrees * Math.PI) / 180;

/** Our own haversine, to check the service's distances against. */
function haversine(a: Point, b: Point): number {
  const h =
    Math.sin(toRadians(b.latitude - a.latitude) / 2) ** 2 +
    Math.cos(toRadians(a.latitude)) *
      Math.cos(toRadians(b.latitude)) *
      Math.sin(toRadians(b.longitude - a.longitude) / 2) ** 2;
  return 2 * EARTH_RADIUS_METERS * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** A point `meters` due north of `from` (along a meridian the distance is exact). */
const north = (from: Point, meters: number): Point => ({
  latitude: from.latitude + meters / METERS_PER_DEGREE_LATITUDE,
  longitude: from.longitude,
});

/**
 * A base point per test, 6° of latitude (about 667 km) apart and far from Chicago, so that no
 * test's stores fall within reach (50 km pickup, at most 20 km delivery) of another's.
 */
const region = (index: number): Point => ({ latitude: -48 + index * 6, longitude: 20 });

/** PUT a store at `position` (the fixture's Chicago store otherwise); returns its id. */
async function createStore(position: Point, overrides: Record<string, unknown> = {}) {
  const storeId = newStoreId();
  const base = storeProfile();
  const response = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile({ ...overrides, address: { ...base.address, ...position } }),
  });
  expect(response.status, response.text).toBe(201);
  return storeId;
}

async function pause(storeId: string, resumeAt?: string) {
  const response = await call(platform.baseUrl, 'POST', `/v1/commerce/stores/${storeId}/status`, {
    apiKey: commerce.apiKey,
    body: { status: 'paused', reason: 'too_busy', ...(resumeAt ? { resumeAt } : {}) },
  });
  expect(response.status, response.text).toBe(200);
}

const discover = (body: unknown, apiKey = distribution.apiKey) =>
  call(platform.baseUrl, 'POST', DISCOVER, { apiKey, body });

interface Found {
  storeId: string;
  name: string;
  distanceMeters: number;
  isOpenNow: boolean;
  nextOpenAt: string | null;
  status: string;
  address: Point;
}

/** A successful discovery's stores. */
function storesOf(response: HttpResult): Found[] {
  expect(response.status, response.text).toBe(200);
  return response.body.stores as Found[];
}
const idsOf = (response: HttpResult) => storesOf(response).map((store) => store.storeId);
const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Distances are whole meters, ascending, and within 1 m of our haversine from `center`. */
function expectDistances(stores: Found[], center: Point) {
  for (const [index, store] of stores.entries()) {
    expect(Number.isInteger(store.distanceMeters)).toBe(true);
    expect(Math.abs(store.distanceMeters - haversine(center, store.address))).toBeLessThanOrEqual(
      1,
    );
    if (index > 0)
      expect(store.distanceMeters).toBeGreaterThanOrEqual(stores[index - 1]!.distanceMeters);
  }
}

function expectProblem(response: HttpResult, status: number, errorCode: string) {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({ status, errorCode, instance: DISCOVER });
  expect(response.body.requestId).toBe(response.headers.get('x-request-id'));
}

describe('nearest first', () => {
  it('orders by distanceMeters (whole meters), ties by storeId, from coordinates', async () => {
    const center = region(0);
    const far = await createStore(north(center, 3_000), { name: 'Far' });
    const near = await createStore(north(center, 1_000), { name: 'Near' });
    const tiedA = await createStore(north(center, 2_000), { name: 'Tied A' });
    const tiedB = await createStore(north(center, 2_000), { name: 'Tied B' });
    const tied = [tiedA, tiedB].sort(byId);
    const expected = [near, ...tied, far];

    for (const fulfillmentType of ['PICKUP', 'DELIVERY_BY_MERCHANT']) {
      const response = await discover({ location: center, fulfillmentType });
      const stores = storesOf(response);
      expect(
        stores.map((store) => store.storeId),
        fulfillmentType,
      ).toEqual(expected);
      expect(response.body).toMatchObject({ totalCount: 4, hasMore: false });
      expectDistances(stores, center);
      expect(stores.map((store) => store.distanceMeters)).toEqual([1_000, 2_000, 2_000, 3_000]);
    }
  });

  it('geocodes an address location by its ZIP code (60601 → 41.8858,-87.6181)', async () => {
    const loop = { latitude: 41.8858, longitude: -87.6181 };
    const name = `Zip Diner ${newStoreId()}`;
    const second = await createStore(north(loop, -1_500), { name: `${name} 2` });
    const first = await createStore(north(loop, 500), { name: `${name} 1` });
    const third = await createStore(north(loop, 2_500), { name: `${name} 3` });
    const address = {
      address1: '100 E Randolph St',
      address2: null,
      city: 'Chicago',
      state: 'IL',
      postalCode: '60601',
      country: 'US',
    };

    const byAddress = await discover({ location: address, fulfillmentType: 'PICKUP', query: name });
    const stores = storesOf(byAddress);
    expect(stores.map((store) => store.storeId)).toEqual([first, second, third]);
    expect(stores.map((store) => store.distanceMeters)).toEqual([500, 1_500, 2_500]);
    expectDistances(stores, loop);
    // The same answer as the gazetteer's coordinates given directly; ZIP+4 and no address2 too.
    const byCoordinates = await discover({
      location: loop,
      fulfillmentType: 'PICKUP',
      query: name,
    });
    expect(byCoordinates.body).toEqual(byAddress.body);
    const { address2: _omitted, ...withoutAddress2 } = address;
    const zipPlus4 = await discover({
      location: { ...withoutAddress2, postalCode: '60601-1234' },
      fulfillmentType: 'DELIVERY_BY_MERCHANT',
      query: name,
    });
    expect(idsOf(zipPlus4)).toEqual([first, second, third]);

    // New York (10001) is far from all of them.
    const newYork = await discover({
      location: { ...address, city: 'New York', state: 'NY', postalCode: '10001' },
      fulfillmentType: 'PICKUP',
      query: name,
    });
    expect(newYork.body).toEqual({ stores: [], totalCount: 0, hasMore: false });
    // A Canadian postal code is in the gazetteer too (by its forward sortation area).
    const toronto = await discover({
      location: { ...address, city: 'Toronto', state: 'ON', postalCode: 'M5V 3L9', country: 'CA' },
      fulfillmentType: 'PICKUP',
      query: name,
    });
    expect(toronto.body).toEqual({ stores: [], totalCount: 0, hasMore: false });
  });
});

describe('reach', () => {
  it('delivers only where the store’s own radius covers the customer', async () => {
    const center = region(1);
    const inside = await createStore(north(center, 4_900), { name: 'Inside' });
    const outside = await createStore(north(center, 5_100), { name: 'Outside' });
    const wide = await createStore(north(center, 10_000), {
      name: 'Wide',
      delivery: { radiusMeters: 20_000, fee: 4.5, minimumOrder: 20, etaMinutes: 60 },
    });
    const pickupOnly = await createStore(north(center, 1_000), {
      name: 'Pickup only',
      fulfillmentTypes: ['PICKUP'],
      delivery: null,
    });
    const deliveryOnly = await createStore(north(center, 2_000), {
      name: 'Delivery only',
      fulfillmentTypes: ['DELIVERY_BY_MERCHANT'],
      pickup: null,
    });

    const delivery = await discover({ location: center, fulfillmentType: 'DELIVERY_BY_MERCHANT' });
    const delivered = storesOf(delivery);
    expect(delivered.map((store) => store.storeId)).toEqual([deliveryOnly, inside, wide]);
    expect(delivery.body).toMatchObject({ totalCount: 3, hasMore: false });
    expectDistances(delivered, center);
    expect(delivered.map((store) => store.distanceMeters)).toEqual([2_000, 4_900, 10_000]);
    expect(delivered.map((store) => store.storeId)).not.toContain(outside);
    expect(delivered.map((store) => store.storeId)).not.toContain(pickupOnly);

    // The pickup-only store is still found for pickup, the delivery-only one is not.
    const pickup = await discover({ location: center, fulfillmentType: 'PICKUP' });
    expect(idsOf(pickup)).toEqual([pickupOnly, inside, outside, wide]);
    expectDistances(storesOf(pickup), center);
  });

  it('looks 50 km around for pickup: 49 km is in, 60 km is out', async () => {
    const center = region(2);
    const within = await createStore(north(center, 49_000), { name: 'Within' });
    const beyond = await createStore(north(center, 60_000), { name: 'Beyond' });
    const response = await discover({ location: center, fulfillmentType: 'PICKUP' });
    const stores = storesOf(response);
    expect(stores.map((store) => store.storeId)).toEqual([within]);
    expect(stores[0]!.distanceMeters).toBe(49_000);
    expectDistances(stores, center);
    expect(response.body).toMatchObject({ totalCount: 1, hasMore: false });

    // From beyond's own position both are within 50 km (0 m and 11 km).
    const nearBeyond = await discover({
      location: north(center, 60_000),
      fulfillmentType: 'PICKUP',
    });
    expect(idsOf(nearBeyond)).toEqual([beyond, within]);
    // Their 5 km delivery radius covers neither center.
    const delivery = await discover({ location: center, fulfillmentType: 'DELIVERY_BY_MERCHANT' });
    expect(delivery.body).toEqual({ stores: [], totalCount: 0, hasMore: false });
  });
});

describe('query', () => {
  it('filters by a case-insensitive substring of the name', async () => {
    const center = region(3);
    const dragon = await createStore(north(center, 100), { name: 'Golden Dragon Noodles' });
    const goldenSpoon = await createStore(north(center, 200), { name: 'golden SPOON' });
    const silverSpoon = await createStore(north(center, 300), { name: 'Silver Spoon' });
    const search = (query: string) =>
      discover({ location: center, fulfillmentType: 'PICKUP', query });

    expect(idsOf(await search('GOLDEN'))).toEqual([dragon, goldenSpoon]);
    expect(idsOf(await search('spoon'))).toEqual([goldenSpoon, silverSpoon]);
    expect(idsOf(await search('  noodles  '))).toEqual([dragon]);
    const none = await search('pizza');
    expect(none.body).toEqual({ stores: [], totalCount: 0, hasMore: false });
    const all = await discover({ location: center, fulfillmentType: 'PICKUP' });
    expect(all.body.totalCount).toBe(3);
  });

  it('takes % and _ (and \\) in the query literally', async () => {
    const center = region(4);
    const literal = await createStore(north(center, 100), { name: 'Fish_and%Chips' });
    await createStore(north(center, 200), { name: 'FishXandYChips' });
    await createStore(north(center, 300), { name: 'Fish and Chips' });
    const backslash = await createStore(north(center, 400), { name: 'Back\\slash Bistro' });
    const search = (query: string) =>
      discover({ location: center, fulfillmentType: 'PICKUP', query });

    for (const query of ['Fish_and%Chips', '_and%', 'h_a', '%', '_', 'fish_AND%chips']) {
      const response = await search(query);
      expect(idsOf(response), query).toEqual([literal]);
      expect(response.body.totalCount, query).toBe(1);
    }
    expect(idsOf(await search('\\'))).toEqual([backslash]);
    expect(idsOf(await search('k\\s'))).toEqual([backslash]);
    expect((await search('%%')).body.totalCount).toBe(0);
    expect((await search('Fish%Chips')).body.totalCount).toBe(0);
  });
});

describe('pagination', () => {
  it('pages with limit/offset, totalCount and hasMore, in a stable order', async () => {
    const center = region(5);
    const at1 = await createStore(north(center, 1_000));
    const tied = [await createStore(north(center, 2_000)), await createStore(north(center, 2_000))];
    const at3 = await createStore(north(center, 3_000));
    const at4 = await createStore(north(center, 4_000));
    const expected = [at1, ...tied.sort(byId), at3, at4];
    const page = (limit?: number, offset?: number) =>
      discover({ location: center, fulfillmentType: 'PICKUP', limit, offset });

    const everything = await page();
    expect(idsOf(everything)).toEqual(expected);
    expect(everything.body).toMatchObject({ totalCount: 5, hasMore: false });

    const seen: string[] = [];
    for (const [offset, hasMore] of [
      [0, true],
      [2, true],
      [4, false],
    ] as const) {
      const response = await page(2, offset);
      expect(response.body, `offset ${offset}`).toMatchObject({ totalCount: 5, hasMore });
      seen.push(...idsOf(response));
    }
    expect(seen).toEqual(expected);
    // The same page again is the same page (the tie split across pages 1 and 2 included).
    expect(idsOf(await page(2, 1))).toEqual(expected.slice(1, 3));
    expect(idsOf(await page(2, 1))).toEqual(expected.slice(1, 3));
    expect((await page(5, 0)).body).toMatchObject({ totalCount: 5, hasMore: false });
    expect((await page(4, 0)).body).toMatchObject({ totalCount: 5, hasMore: true });

    for (const offset of [5, 10, 10_000]) {
      const past = await page(2, offset);
      expect(past.body, `offset ${offset}`).toEqual({ stores: [], totalCount: 5, hasMore: false });
    }
  });
});

describe('scheduledTime', () => {
  /** Monday 2026-11-23 in Chicago (CST, UTC−6). */
  const mondayNoon = '2026-11-23T18:00:00.000Z';
  const mondayEight = '2026-11-23T14:00:00.000Z';
  const mondayTen = '2026-11-24T04:00:00.000Z'; // 22:00 local: the window has ended
  const sundayNoon = '2026-11-22T18:00:00.000Z';

  it('keeps only stores open at that instant in their own time zone', async () => {
    const center = region(6);
    const monday = await createStore(north(center, 100), {
      name: 'Mondays',
      availability: [{ dayOfWeek: 'Monday', start: '08:00:00', end: '22:00:00' }],
    });
    const never = await createStore(north(center, 200), { name: 'Never', availability: [] });
    await createStore(north(center, 250), { name: 'Null hours', availability: null });
    const always = await createStore(north(center, 300), {
      name: 'Always',
      availability: alwaysOpen,
    });
    const at = (scheduledTime: string, extra: Record<string, unknown> = {}) =>
      discover({ location: center, fulfillmentType: 'PICKUP', scheduledTime, ...extra });

    const mondayResult = await at(mondayNoon);
    expect(idsOf(mondayResult)).toEqual([monday, always]);
    expect(mondayResult.body).toMatchObject({ totalCount: 2, hasMore: false });
    expectDistances(storesOf(mondayResult), center);
    expect(idsOf(await at(mondayEight))).toEqual([monday, always]);
    expect(idsOf(await at(mondayTen))).toEqual([always]);
    const sunday = await at(sundayNoon);
    expect(idsOf(sunday)).toEqual([always]);
    expect(sunday.body.totalCount).toBe(1);
    expect(idsOf(sunday)).not.toContain(never);

    // Paging applies after the opening-hours filter.
    const second = await at(mondayNoon, { limit: 1, offset: 1 });
    expect(idsOf(second)).toEqual([always]);
    expect(second.body).toMatchObject({ totalCount: 2, hasMore: false });
    const first = await at(mondayNoon, { limit: 1 });
    expect(idsOf(first)).toEqual([monday]);
    expect(first.body).toMatchObject({ totalCount: 2, hasMore: true });
    expect((await at(mondayNoon, { offset: 5 })).body).toEqual({
      stores: [],
      totalCount: 2,
      hasMore: false,
    });
    // Without a scheduledTime every store is listed, open or not.
    expect((await discover({ location: center, fulfillmentType: 'PICKUP' })).body.totalCount).toBe(
      4,
    );
  });

  it('leaves out a paused store until its resumeAt', async () => {
    const center = region(7);
    const resumes = await createStore(north(center, 100), {
      name: 'Resumes',
      availability: alwaysOpen,
    });
    const stays = await createStore(north(center, 200), {
      name: 'Stays paused',
      availability: alwaysOpen,
    });
    const open = await createStore(north(center, 300), { name: 'Open', availability: alwaysOpen });
    const now = Date.now();
    const resumeAt = new Date(now + 2 * 3_600_000).toISOString();
    await pause(resumes, resumeAt);
    await pause(stays);
    const at = (offsetMs: number) =>
      discover({
        location: center,
        fulfillmentType: 'DELIVERY_BY_MERCHANT',
        scheduledTime: new Date(now + offsetMs).toISOString(),
      });

    expect(idsOf(await at(3_600_000))).toEqual([open]);
    expect(idsOf(await at(3 * 3_600_000))).toEqual([resumes, open]);
    expect(idsOf(await at(2 * 3_600_000))).toEqual([resumes, open]); // resumeAt itself
    expect(idsOf(await at(30 * 24 * 3_600_000))).not.toContain(stays);
  });
});

/** The fixture's windows (Monday 08–22, Friday 18–24, Chicago) worked out independently. */
function fixtureOpening(now: Date): { isOpenNow: boolean; nextOpenAt: string | null } {
  const local = DateTime.fromJSDate(now, { zone: 'America/Chicago' });
  const openNow =
    (local.weekday === 1 && local.hour >= 8 && local.hour < 22) ||
    (local.weekday === 5 && local.hour >= 18);
  if (openNow) return { isOpenNow: true, nextOpenAt: null };
  const openings: DateTime[] = [];
  for (let days = 0; days <= 7; days++) {
    const date = local.startOf('day').plus({ days });
    if (date.weekday === 1) openings.push(date.set({ hour: 8 }));
    if (date.weekday === 5) openings.push(date.set({ hour: 18 }));
  }
  const next = openings.filter((opening) => opening.toMillis() > now.getTime())[0]!;
  return { isOpenNow: false, nextOpenAt: next.toUTC().toISO({ suppressMilliseconds: false })! };
}

describe('isOpenNow and nextOpenAt', () => {
  it('are computed for every store found, from its windows and pause', async () => {
    const center = region(8);
    const noWindows = await createStore(north(center, 100), { availability: [] });
    const always = await createStore(north(center, 200), { availability: alwaysOpen });
    const pausedForever = await createStore(north(center, 300), { availability: alwaysOpen });
    const pausedUntil = await createStore(north(center, 400), { availability: alwaysOpen });
    const fixtureHours = await createStore(north(center, 500));
    await pause(pausedForever);
    const resumeAt = new Date(Date.now() + 2 * 3_600_000).toISOString();
    await pause(pausedUntil, resumeAt);

    const before = fixtureOpening(new Date());
    const response = await discover({ location: center, fulfillmentType: 'PICKUP' });
    const after = fixtureOpening(new Date());
    const found = new Map(storesOf(response).map((store) => [store.storeId, store]));
    expect(found.size).toBe(5);
    expect(found.get(noWindows)).toMatchObject({ isOpenNow: false, nextOpenAt: null });
    expect(found.get(always)).toMatchObject({ isOpenNow: true, nextOpenAt: null });
    expect(found.get(pausedForever)).toMatchObject({
      status: 'paused',
      isOpenNow: false,
      nextOpenAt: null,
    });
    expect(found.get(pausedUntil)).toMatchObject({
      status: 'paused',
      isOpenNow: false,
      nextOpenAt: resumeAt,
    });
    const fixture = found.get(fixtureHours)!;
    expect([before, after]).toContainEqual({
      isOpenNow: fixture.isOpenNow,
      nextOpenAt: fixture.nextOpenAt,
    });
    // The marketfront lookup shows the same store, without the distance.
    for (const storeId of [noWindows, always, pausedForever, pausedUntil]) {
      const { distanceMeters: _distance, ...view } = found.get(storeId)!;
      const lookup = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}`, {
        apiKey: distribution.apiKey,
      });
      expect(lookup.body).toEqual(view);
    }
  });

  it('are shown by the marketfront store lookup too', async () => {
    const center = region(9);
    const lookup = (storeId: string) =>
      call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}`, {
        apiKey: distribution.apiKey,
      });
    const always = await createStore(center, { availability: alwaysOpen });
    const never = await createStore(center, { availability: null });
    const paused = await createStore(center, { availability: alwaysOpen });
    const resumeAt = new Date(Date.now() + 2 * 3_600_000).toISOString();
    await pause(paused, resumeAt);

    const open = await lookup(always);
    expect(open.status).toBe(200);
    expect(open.body).toMatchObject({ storeId: always, isOpenNow: true, nextOpenAt: null });
    expect(open.body).not.toHaveProperty('distanceMeters');
    expect((await lookup(never)).body).toMatchObject({
      isOpenNow: false,
      nextOpenAt: null,
      availability: [],
    });
    expect((await lookup(paused)).body).toMatchObject({
      status: 'paused',
      isOpenNow: false,
      nextOpenAt: resumeAt,
    });
  });
});

describe('errors', () => {
  const chicagoAddress = {
    address1: '100 E Randolph St',
    city: 'Chicago',
    state: 'IL',
    postalCode: '60601',
    country: 'US',
  };

  it('answers an address it cannot geocode with 422 ADDRESS_INVALID at /location/postalCode', async () => {
    for (const location of [
      { ...chicagoAddress, postalCode: '00000' },
      { ...chicagoAddress, postalCode: 'ABCDE' },
      { ...chicagoAddress, country: 'GB', postalCode: 'SW1A 1AA' },
      { ...chicagoAddress, country: 'DE' }, // a known US ZIP, but not a US address
    ]) {
      const response = await discover({ location, fulfillmentType: 'PICKUP' });
      expectProblem(response, 422, 'ADDRESS_INVALID');
      expect(response.body.errorCategory, location.postalCode).toBe('validation');
      expect(response.body.retryable).toBe(false);
      expect(response.body.errors[0]).toMatchObject({
        code: 'ADDRESS_INVALID',
        pointer: '/location/postalCode',
      });
    }
  });

  it.each([
    ['a missing fulfillmentType', { location: { latitude: 1, longitude: 1 } }, '/fulfillmentType'],
    [
      'an unknown fulfillmentType',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'DRONE' },
      '/fulfillmentType',
    ],
    [
      'latitude 91',
      { location: { latitude: 91, longitude: 1 }, fulfillmentType: 'PICKUP' },
      '/location/latitude',
    ],
    ['location as a string', { location: 'Chicago', fulfillmentType: 'PICKUP' }, '/location'],
    ['a missing location', { fulfillmentType: 'PICKUP' }, '/location'],
    [
      'limit 0',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP', limit: 0 },
      '/limit',
    ],
    [
      'limit 101',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP', limit: 101 },
      '/limit',
    ],
    [
      'a negative offset',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP', offset: -1 },
      '/offset',
    ],
    [
      'offset 10,001',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP', offset: 10_001 },
      '/offset',
    ],
    [
      'a query of 101 characters',
      {
        location: { latitude: 1, longitude: 1 },
        fulfillmentType: 'PICKUP',
        query: 'q'.repeat(101),
      },
      '/query',
    ],
    [
      'a blank query',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP', query: '   ' },
      '/query',
    ],
    [
      'an address without a postalCode',
      {
        location: { address1: '1 Main St', city: 'Chicago', state: 'IL', country: 'US' },
        fulfillmentType: 'PICKUP',
      },
      '/location',
    ],
    [
      'a scheduledTime that is not a date-time',
      { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP', scheduledTime: 'soon' },
      '/scheduledTime',
    ],
  ])('answers %s with 400 REQUEST_INVALID and a pointer', async (_case, body, pointer) => {
    const response = await discover(body);
    expectProblem(response, 400, 'REQUEST_INVALID');
    expect(response.body.errorCategory).toBe('validation');
    expect(response.body.errors.map((error: { pointer: string }) => error.pointer)).toEqual([
      pointer,
    ]);
  });

  it.each([
    ['truncated JSON', '{"location": ', 'The body is not valid JSON'],
    ['an empty body', '', 'The JSON body is empty'],
    [
      'a __proto__ key',
      '{"__proto__": {"x": 1}, "fulfillmentType": "PICKUP"}',
      'The body contains a forbidden property name',
    ],
  ])('answers %s with 400 REQUEST_INVALID', async (_case, rawBody, detail) => {
    const response = await call(platform.baseUrl, 'POST', DISCOVER, {
      apiKey: distribution.apiKey,
      rawBody,
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
    expect(response.body).toMatchObject({ errorCategory: 'validation', detail });
  });

  it('answers JSON nested 300,000 levels deep with 400, never a 500', async () => {
    const response = await call(platform.baseUrl, 'POST', DISCOVER, {
      apiKey: distribution.apiKey,
      rawBody: `{"location":${'['.repeat(300_000)}${']'.repeat(300_000)}}`,
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
  });

  it('needs a distribution key: 401 without one, 403 with a commerce key', async () => {
    const body = { location: { latitude: 1, longitude: 1 }, fulfillmentType: 'PICKUP' };
    const anonymous = await call(platform.baseUrl, 'POST', DISCOVER, { body });
    expectProblem(anonymous, 401, 'UNAUTHORIZED');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    // The key is checked before the body.
    expectProblem(
      await call(platform.baseUrl, 'POST', DISCOVER, { rawBody: 'not json' }),
      401,
      'UNAUTHORIZED',
    );
    const forbidden = await discover(body, commerce.apiKey);
    expectProblem(forbidden, 403, 'FORBIDDEN');
    expect(forbidden.body.errorCategory).toBe('authorization');
  });

  it('limits discovery per partner: the 3rd call of 2 a minute is 429 with Retry-After', async () => {
    const limited = await platform.newPartner('distribution');
    await setRateLimits(platform.gatewayDb, limited.partnerId, { discovery: 2 });
    // Calls the service refuses count too: an address it cannot place is 422, not 429.
    const body = {
      location: { ...chicagoAddress, postalCode: '00000' },
      fulfillmentType: 'PICKUP',
    };
    const responses: HttpResult[] = [];
    for (let i = 0; i < 3; i++) responses.push(await discover(body, limited.apiKey));
    expect(responses.map((response) => response.status)).toEqual([422, 422, 429]);
    expect(responses.map((response) => response.headers.get('x-ratelimit-limit'))).toEqual([
      '2',
      '2',
      '2',
    ]);
    expect(responses[0]!.headers.get('x-ratelimit-remaining')).toBe('1');
    const refused = responses[2]!;
    expectProblem(refused, 429, 'RATE_LIMITED');
    expect(refused.body).toMatchObject({ errorCategory: 'rate_limit', retryable: true });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    // Other partners keep their own budget.
    expect((await discover(body)).status).toBe(422);
  });
});
