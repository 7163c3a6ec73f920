import { subjects, type PostalAddress } from '@pcp/contracts';
import {
  applyJetStreamTopology,
  createBusClient,
  createDatabase,
  jetStreamTopology,
  type BusClient,
  type RequestContext,
  type ServiceInstance,
} from '@pcp/service-kit';
import fc from 'fast-check';
import type { Kysely } from 'kysely';
import { DateTime } from 'luxon';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import {
  createStoresService,
  STORES_SCHEMA,
  type Geocoder,
  type StoresDatabase,
} from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<StoresDatabase>;
let service: ServiceInstance;
let client: BusClient;
/** The service's clock; tests move it. */
let clockNow = new Date('2026-11-22T12:00:00.000Z');

const partnerId = randomUUID();
const commerce = (): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'commerce',
  mode: 'live',
});
/** Ordering asks these on behalf of a distribution partner. */
const caller = (): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode: 'live',
});

const serviceDeps = (subjectPrefix: string) => ({
  nc: env.nc,
  logger: env.logger,
  metrics: env.newMetrics('stores'),
  subjectPrefix,
  requestTimeoutMs: 5_000,
  db,
  clock: () => clockNow,
});

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<StoresDatabase>({
    url: env.databaseUrl,
    schema: STORES_SCHEMA,
    applicationName: 'test',
  });
  service = createStoresService(serviceDeps(env.prefix));
  await service.start();
  client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterAll(async () => {
  await service?.stop();
  await db?.destroy();
  await env?.cleanup();
});

/** The fixture's store location: 233 S Wacker Dr, Chicago. */
const WACKER = { latitude: 41.8789, longitude: -87.6359 };
/** The gazetteer's centroid of ZIP 60601. */
const ZIP_60601 = { latitude: 41.8858, longitude: -87.6181 };

async function createStore(overrides: Record<string, unknown> = {}): Promise<string> {
  const storeId = randomUUID();
  const { created } = await client.request(
    subjects.stores.upsert,
    { storeId, profile: storeProfile(overrides) },
    commerce(),
  );
  expect(created).toBe(true);
  return storeId;
}

/** Pause at the current clock (which must be before `resumeAt`). */
async function pause(storeId: string, resumeAt?: string) {
  await client.request(
    subjects.stores.setStatus,
    { storeId, change: { status: 'paused', reason: 'too_busy', resumeAt } },
    commerce(),
  );
}

const availabilityOf = async (storeId: string, at?: string) =>
  (await client.request(subjects.stores.orderContext, at ? { storeId, at } : { storeId }, caller()))
    .availability;

const geocode = (address: PostalAddress, bus: BusClient = client) =>
  bus.request(subjects.stores.geocode, { address }, caller());

const EARTH_RADIUS_METERS = 6_371_008.8;
const north = (from: { latitude: number; longitude: number }, meters: number) => ({
  latitude: from.latitude + meters / ((Math.PI * EARTH_RADIUS_METERS) / 180),
  longitude: from.longitude,
});

// Instants around the week of Monday 2026-11-23 in Chicago (CST, UTC−6).
const SUNDAY_NOON = '2026-11-22T18:00:00.000Z';
const MONDAY_0759_59 = '2026-11-23T13:59:59.000Z';
const MONDAY_0800 = '2026-11-23T14:00:00.000Z';
const MONDAY_NOON = '2026-11-23T18:00:00.000Z';
const MONDAY_1400 = '2026-11-23T20:00:00.000Z';
const MONDAY_2200 = '2026-11-24T04:00:00.000Z';
const TUESDAY_0600 = '2026-11-24T12:00:00.000Z';
const TUESDAY_NOON = '2026-11-24T18:00:00.000Z';
const FRIDAY_1800 = '2026-11-28T00:00:00.000Z';
const FRIDAY_2300 = '2026-11-28T05:00:00.000Z';
const SATURDAY_0000 = '2026-11-28T06:00:00.000Z';
const NEXT_MONDAY_0800 = '2026-11-30T14:00:00.000Z';

describe('stores.v1.order-context: availability', () => {
  it('answers ASAP (no `at`) at the injected clock', async () => {
    const storeId = await createStore();
    clockNow = new Date(MONDAY_NOON);
    expect(await availabilityOf(storeId)).toEqual({
      storeId,
      at: MONDAY_NOON,
      open: true,
      closedReason: null,
      nextOpenAt: null,
      timezone: 'America/Chicago',
    });
    clockNow = new Date(SUNDAY_NOON);
    expect(await availabilityOf(storeId)).toEqual({
      storeId,
      at: SUNDAY_NOON,
      open: false,
      closedReason: 'outside_hours',
      nextOpenAt: MONDAY_0800,
      timezone: 'America/Chicago',
    });
  });

  it('answers SCHEDULED (`at`) whatever the clock says, with the next opening outside hours', async () => {
    const storeId = await createStore();
    clockNow = new Date(SUNDAY_NOON);
    const cases: [at: string, open: boolean, nextOpenAt: string | null][] = [
      [MONDAY_0759_59, false, MONDAY_0800],
      [MONDAY_0800, true, null], // start inclusive
      [MONDAY_NOON, true, null],
      [MONDAY_2200, false, FRIDAY_1800], // end exclusive
      [TUESDAY_NOON, false, FRIDAY_1800],
      [FRIDAY_1800, true, null],
      [FRIDAY_2300, true, null], // an end of 00:00:00 runs to midnight
      [SATURDAY_0000, false, NEXT_MONDAY_0800],
    ];
    for (const [at, open, nextOpenAt] of cases) {
      expect(await availabilityOf(storeId, at), at).toEqual({
        storeId,
        at,
        open,
        closedReason: open ? null : 'outside_hours',
        nextOpenAt,
        timezone: 'America/Chicago',
      });
    }
  });

  it('never opens without windows, and is always open with all-day windows every day', async () => {
    const never = await createStore({ availability: [] });
    const nullHours = await createStore({ availability: null });
    const always = await createStore({ availability: alwaysOpen });
    for (const at of [MONDAY_NOON, SUNDAY_NOON, SATURDAY_0000]) {
      for (const storeId of [never, nullHours]) {
        expect(await availabilityOf(storeId, at)).toMatchObject({
          open: false,
          closedReason: 'outside_hours',
          nextOpenAt: null,
        });
      }
      expect(await availabilityOf(always, at)).toMatchObject({
        open: true,
        closedReason: null,
        nextOpenAt: null,
      });
    }
  });

  it('is closed as paused during a pause; nextOpenAt is the first opening at or after resumeAt', async () => {
    clockNow = new Date('2026-11-22T12:00:00.000Z');
    // Resumes inside a window (Monday 14:00): it opens at resumeAt itself.
    const resumesInWindow = await createStore();
    await pause(resumesInWindow, MONDAY_1400);
    // Resumes outside its windows (Tuesday 06:00): it opens on Friday at 18:00.
    const resumesOutside = await createStore();
    await pause(resumesOutside, TUESDAY_0600);
    // Paused until the partner says otherwise: no next opening.
    const indefinitely = await createStore();
    await pause(indefinitely);

    expect(await availabilityOf(resumesInWindow, MONDAY_NOON)).toMatchObject({
      open: false,
      closedReason: 'paused',
      nextOpenAt: MONDAY_1400,
    });
    expect(await availabilityOf(resumesOutside, MONDAY_NOON)).toMatchObject({
      open: false,
      closedReason: 'paused',
      nextOpenAt: FRIDAY_1800,
    });
    expect(await availabilityOf(indefinitely, MONDAY_NOON)).toMatchObject({
      open: false,
      closedReason: 'paused',
      nextOpenAt: null,
    });
    // Also while outside the windows: the pause is the reason given.
    expect(await availabilityOf(indefinitely, TUESDAY_NOON)).toMatchObject({
      closedReason: 'paused',
      nextOpenAt: null,
    });

    // From resumeAt on the pause is over (derived, nothing written).
    expect(await availabilityOf(resumesInWindow, MONDAY_1400)).toMatchObject({
      open: true,
      closedReason: null,
      nextOpenAt: null,
    });
    expect(await availabilityOf(resumesOutside, TUESDAY_0600)).toMatchObject({
      open: false,
      closedReason: 'outside_hours',
      nextOpenAt: FRIDAY_1800,
    });
    expect(await availabilityOf(resumesOutside, FRIDAY_1800)).toMatchObject({ open: true });

    // ASAP follows the clock through the pause.
    clockNow = new Date(MONDAY_NOON);
    expect(await availabilityOf(resumesInWindow)).toMatchObject({
      at: MONDAY_NOON,
      closedReason: 'paused',
      nextOpenAt: MONDAY_1400,
    });
    clockNow = new Date('2026-11-23T20:00:01.000Z');
    expect(await availabilityOf(resumesInWindow)).toMatchObject({ open: true });
  });

  it('is exact across a daylight-saving gap (a 02:30 window on a spring-forward night)', async () => {
    const storeId = await createStore({
      availability: [{ dayOfWeek: 'Sunday', start: '02:30:00', end: '04:00:00' }],
    });
    // 2026-03-08: at 02:00 CST (08:00Z) Chicago clocks jump to 03:00 CDT; 02:30 never occurs.
    expect(await availabilityOf(storeId, '2026-03-08T07:59:00.000Z')).toEqual({
      storeId,
      at: '2026-03-08T07:59:00.000Z',
      open: false,
      closedReason: 'outside_hours',
      nextOpenAt: '2026-03-08T08:00:00.000Z',
      timezone: 'America/Chicago',
    });
    expect(await availabilityOf(storeId, '2026-03-08T08:00:00.000Z')).toMatchObject({
      open: true,
    });
    expect(await availabilityOf(storeId, '2026-03-08T08:59:59.000Z')).toMatchObject({
      open: true,
    });
    // 04:00 CDT: closed until next Sunday 02:30 CDT.
    expect(await availabilityOf(storeId, '2026-03-08T09:00:00.000Z')).toMatchObject({
      open: false,
      nextOpenAt: '2026-03-15T07:30:00.000Z',
    });
  });

  it('agrees with the windows worked out independently, at any instant (property)', async () => {
    const storeId = await createStore();
    // The fixture's windows, Monday 08–22 and Friday 18–24 in Chicago, far from 02:00 changes.
    const expected = (instant: Date) => {
      const local = DateTime.fromJSDate(instant, { zone: 'America/Chicago' });
      const open =
        (local.weekday === 1 && local.hour >= 8 && local.hour < 22) ||
        (local.weekday === 5 && local.hour >= 18);
      if (open) return { open, nextOpenAt: null };
      const openings: DateTime[] = [];
      for (let days = 0; days <= 7; days++) {
        const date = local.startOf('day').plus({ days });
        if (date.weekday === 1) openings.push(date.set({ hour: 8 }));
        if (date.weekday === 5) openings.push(date.set({ hour: 18 }));
      }
      const next = openings.find((opening) => opening.toMillis() > instant.getTime())!;
      return { open, nextOpenAt: next.toUTC().toJSDate().toISOString() };
    };
    const start = Date.parse('2026-01-01T00:00:00.000Z');
    const end = Date.parse('2027-12-31T00:00:00.000Z');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: start / 1000, max: end / 1000 }).map((s) => new Date(s * 1000)),
        async (instant) => {
          const answer = await availabilityOf(storeId, instant.toISOString());
          expect(answer).toMatchObject(expected(instant));
          expect(answer.closedReason).toBe(answer.open ? null : 'outside_hours');
        },
      ),
      { numRuns: 60 },
    );
  });

  it('answers STORE_NOT_FOUND for an unknown store', async () => {
    await expectAppError(availabilityOf(randomUUID()), 'STORE_NOT_FOUND');
    await expectAppError(availabilityOf(randomUUID(), MONDAY_NOON), 'STORE_NOT_FOUND');
  });
});

describe('stores.v1.geocode', () => {
  const address: PostalAddress = {
    address1: '100 E Randolph St',
    city: 'Chicago',
    state: 'IL',
    postalCode: '60601',
    country: 'US',
  };

  it('resolves an address through the gazetteer, echoing it with address2', async () => {
    expect(await geocode(address)).toEqual({
      ...ZIP_60601,
      address: { ...address, address2: null },
    });
    // An address2 is echoed as given; a ZIP+4 resolves by its 5 digits.
    const suite = { ...address, address2: 'Suite 200', postalCode: '60601-3210' };
    expect(await geocode(suite)).toEqual({ ...ZIP_60601, address: suite });
    expect(
      await geocode({ ...address, city: 'New York', state: 'NY', postalCode: '10001' }),
    ).toMatchObject({ latitude: 40.7484, longitude: -73.9967 });
  });

  it('answers ADDRESS_INVALID at /address/postalCode for an address it cannot place', async () => {
    for (const unknown of [
      { ...address, postalCode: '00000' },
      { ...address, country: 'GB', postalCode: 'SW1A 1AA' },
    ]) {
      const error = await expectAppError(geocode(unknown), 'ADDRESS_INVALID');
      expect(error.errors?.[0]).toMatchObject({
        code: 'ADDRESS_INVALID',
        pointer: '/address/postalCode',
      });
    }
  });

  it('resolves addresses through the injected Geocoder', async () => {
    const fixedPoint = north(WACKER, 4_000);
    const asked: PostalAddress[] = [];
    const geocoder: Geocoder = {
      geocode(query) {
        asked.push(query);
        return query.postalCode === 'NOWHERE' ? null : fixedPoint;
      },
    };
    // Its own subject prefix, so the default service does not share its requests.
    const prefix = `${env.prefix}_geo`;
    // What the migration step does for a deployment prefix: its streams and consumers.
    await applyJetStreamTopology(await env.nc.jetstreamManager(), jetStreamTopology(prefix));
    const fake = createStoresService({ ...serviceDeps(prefix), geocoder });
    await fake.start();
    try {
      const fakeClient = createBusClient(env.nc, { prefix, timeoutMs: 5_000, logger: env.logger });
      // A ZIP the gazetteer does not know is placed wherever the injected geocoder says.
      const unknownZip = { ...address, postalCode: '00000' };
      expect(await geocode(unknownZip, fakeClient)).toEqual({
        ...fixedPoint,
        address: { ...unknownZip, address2: null },
      });
      expect(asked).toEqual([expect.objectContaining(unknownZip)]);
      const error = await expectAppError(
        geocode({ ...address, postalCode: 'NOWHERE' }, fakeClient),
        'ADDRESS_INVALID',
      );
      expect(error.errors?.[0]?.pointer).toBe('/address/postalCode');
    } finally {
      await fake.stop();
    }
  });
});
