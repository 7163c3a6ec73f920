import { subjects, type SpecialDay } from '@pcp/contracts';
import { type BusClient, type RequestContext } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { storeProfile } from '@pcp/testing/fixtures';
import type { StoresDatabase } from '../../src/app.js';

let stores: StoresUnderTest;
let db: Kysely<StoresDatabase>;
let client: BusClient;
/** The service's clock; tests move it. */
let clockNow = new Date('2026-12-20T18:00:00.000Z');

const commerce = (partnerId: string): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'commerce',
  mode: 'live',
});
const distribution = (): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode: 'live',
});

/** Every day 08:00-22:00 in Chicago. */
const DAILY = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'].map(
  (dayOfWeek) => ({ dayOfWeek, start: '08:00:00', end: '22:00:00' }),
);
const WHERE = { latitude: 41.8789, longitude: -87.6359 };

/** A new Chicago store open daily 08:00-22:00, named so a discovery query finds it alone. */
async function newStore(overrides: Record<string, unknown> = {}) {
  const partnerId = randomUUID();
  const storeId = randomUUID();
  const name = `Hours ${storeId}`;
  const { store } = await client.request(
    subjects.stores.upsert,
    {
      storeId,
      profile: storeProfile({
        name,
        availability: DAILY,
        address: { ...storeProfile().address, ...WHERE },
        ...overrides,
      }),
    },
    commerce(partnerId),
  );
  return { partnerId, storeId, name, store };
}

const setSpecialDays = (partnerId: string, storeId: string, days: unknown) =>
  client.request(
    subjects.stores.setSpecialHours,
    { storeId, days: days as SpecialDay[] },
    commerce(partnerId),
  );

const discover = (name: string, scheduledTime?: string) =>
  client.request(
    subjects.stores.discover,
    {
      location: WHERE,
      fulfillmentType: 'PICKUP',
      query: name,
      ...(scheduledTime ? { scheduledTime } : {}),
    },
    distribution(),
  );

beforeAll(async () => {
  stores = await startStoresUnderTest({ clock: () => clockNow });
  ({ db, client } = stores);
});

afterAll(async () => {
  await stores?.stop();
});

describe('special hours', () => {
  it('are empty at first, replaced as a whole and read back by date', async () => {
    const { partnerId, storeId } = await newStore();
    expect(
      await client.request(subjects.stores.getSpecialHours, { storeId }, commerce(partnerId)),
    ).toEqual({ days: [] });
    const days = [
      { date: '2026-12-25', closed: true },
      { date: '2026-12-24', windows: [{ start: '08:00:00', end: '14:00:00' }] },
    ];
    const byDate = [days[1], days[0]];
    expect(await setSpecialDays(partnerId, storeId, days)).toEqual({ days: byDate });
    expect(
      await client.request(subjects.stores.getSpecialHours, { storeId }, commerce(partnerId)),
    ).toEqual({ days: byDate });
    // A profile upsert keeps them.
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile({ availability: DAILY }) },
      commerce(partnerId),
    );
    expect(
      await client.request(subjects.stores.getSpecialHours, { storeId }, commerce(partnerId)),
    ).toEqual({ days: byDate });
    expect(await setSpecialDays(partnerId, storeId, [])).toEqual({ days: [] });
  });

  it('refuse 367 days, duplicate dates and overlapping windows, changing nothing', async () => {
    const { partnerId, storeId } = await newStore();
    await setSpecialDays(partnerId, storeId, [{ date: '2026-12-25', closed: true }]);
    const start = Date.parse('2027-01-01T00:00:00Z');
    const tooMany = Array.from({ length: 367 }, (_, index) => ({
      date: new Date(start + index * 86_400_000).toISOString().slice(0, 10),
      closed: true,
    }));
    const cases: [unknown, string][] = [
      [tooMany, '/days'],
      [
        [
          { date: '2027-01-01', closed: true },
          { date: '2027-01-01', windows: [{ start: '08:00:00', end: '09:00:00' }] },
        ],
        '/days/1/date',
      ],
      [
        [
          {
            date: '2027-01-02',
            windows: [
              { start: '08:00:00', end: '12:00:00' },
              { start: '11:00:00', end: '13:00:00' },
            ],
          },
        ],
        '/days/0/windows/1/start',
      ],
      [[{ date: '2027-02-30', closed: true }], '/days/0/date'],
      [[{ date: '2027-01-03', windows: [{ start: '25:00:00', end: '26:00:00' }] }], '/days/0'],
    ];
    for (const [days, pointer] of cases) {
      const error = await expectAppError(
        setSpecialDays(partnerId, storeId, days),
        'REQUEST_INVALID',
      );
      expect(
        error.errors?.some((issue) => issue.pointer?.startsWith(pointer)),
        JSON.stringify(error.errors),
      ).toBe(true);
    }
    expect(
      await client.request(subjects.stores.getSpecialHours, { storeId }, commerce(partnerId)),
    ).toEqual({ days: [{ date: '2026-12-25', closed: true }] });
  });

  it('belong to their partner: another one gets STORE_NOT_FOUND, a distribution partner FORBIDDEN', async () => {
    const { storeId } = await newStore();
    const stranger = randomUUID();
    await expectAppError(
      client.request(subjects.stores.getSpecialHours, { storeId }, commerce(stranger)),
      'STORE_NOT_FOUND',
    );
    await expectAppError(setSpecialDays(stranger, storeId, []), 'STORE_NOT_FOUND');
    await expectAppError(
      client.request(subjects.stores.getSpecialHours, { storeId }, distribution()),
      'FORBIDDEN',
    );
  });

  it('rule open-now, nextOpenAt, the order context and discovery with a scheduled time', async () => {
    const { partnerId, storeId, name } = await newStore();
    // Closed from Christmas Eve through New Year's Day; the 23rd opens 06:00-10:00 only.
    const closed = [24, 25, 26, 27, 28, 29, 30, 31].map((day) => ({
      date: `2026-12-${day}`,
      closed: true,
    }));
    await setSpecialDays(partnerId, storeId, [
      ...closed,
      { date: '2027-01-01', closed: true },
      { date: '2026-12-23', windows: [{ start: '06:00:00', end: '10:00:00' }] },
    ]);

    // 2026-12-24 12:00 CST: closed all day; next open 2027-01-02 08:00 CST = 14:00Z.
    clockNow = new Date('2026-12-24T18:00:00Z');
    const view = await client.request(subjects.stores.lookup, { storeId }, distribution());
    expect(view).toMatchObject({ isOpenNow: false, nextOpenAt: '2027-01-02T14:00:00.000Z' });
    const context = await client.request(subjects.stores.orderContext, { storeId }, distribution());
    expect(context.availability).toMatchObject({
      open: false,
      closedReason: 'outside_hours',
      nextOpenAt: '2027-01-02T14:00:00.000Z',
    });
    expect((await discover(name, '2026-12-24T18:00:00Z')).stores).toEqual([]);
    expect((await discover(name)).stores).toEqual([
      expect.objectContaining({ storeId, isOpenNow: false }),
    ]);

    // The 23rd: open at 07:00 CST (13:00Z) though the weekly hours are not; closed at 11:00.
    const early = await client.request(
      subjects.stores.orderContext,
      { storeId, at: '2026-12-23T13:00:00Z' },
      distribution(),
    );
    expect(early.availability.open).toBe(true);
    expect((await discover(name, '2026-12-23T13:00:00Z')).stores).toHaveLength(1);
    expect((await discover(name, '2026-12-23T17:00:00Z')).stores).toEqual([]);
    // 21:00 CST on the 23rd is already the 24th in UTC: the special day of the local date rules.
    expect((await discover(name, '2026-12-24T03:00:00Z')).stores).toEqual([]);
    // The day after the run keeps the weekly hours.
    expect((await discover(name, '2027-01-02T15:00:00Z')).stores).toHaveLength(1);
  });
});

describe('busy', () => {
  it('takes orders with extra minutes until its resumeAt, shown in status, views and discovery', async () => {
    const { partnerId, storeId, name } = await newStore();
    clockNow = new Date('2026-12-21T18:00:00Z'); // Monday 12:00 CST: open
    const resumeAt = '2026-12-21T19:00:00.000Z';
    const busy = await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'busy', extraPrepMinutes: 25, resumeAt } },
      commerce(partnerId),
    );
    expect(busy).toEqual({
      status: 'busy',
      reason: null,
      pausedAt: clockNow.toISOString(),
      resumeAt,
      extraPrepMinutes: 25,
      pausedBy: null,
    });
    expect(
      await client.request(subjects.stores.getStatus, { storeId }, commerce(partnerId)),
    ).toEqual(busy);
    const busyView = { status: 'busy', extraPrepMinutes: 25, isOpenNow: true };
    expect(
      await client.request(subjects.stores.get, { storeId }, commerce(partnerId)),
    ).toMatchObject(busyView);
    expect(await client.request(subjects.stores.lookup, { storeId }, distribution())).toMatchObject(
      busyView,
    );
    expect((await discover(name)).stores).toEqual([expect.objectContaining(busyView)]);
    expect((await discover(name, clockNow.toISOString())).stores).toHaveLength(1);
    const context = await client.request(subjects.stores.orderContext, { storeId }, distribution());
    expect(context.store.extraPrepMinutes).toBe(25);
    expect(context.availability.open).toBe(true);

    clockNow = new Date('2026-12-21T19:00:00Z');
    expect(await client.request(subjects.stores.lookup, { storeId }, distribution())).toMatchObject(
      { status: 'online', extraPrepMinutes: null, isOpenNow: true },
    );
  });

  it('refuses 0, 4, 121 and 1,000 minutes and a resumeAt in the past', async () => {
    const { partnerId, storeId } = await newStore();
    clockNow = new Date('2026-12-21T18:00:00Z');
    for (const extraPrepMinutes of [0, 4, 121, 1_000, 10.5]) {
      const error = await expectAppError(
        client.request(
          subjects.stores.setStatus,
          { storeId, change: { status: 'busy', extraPrepMinutes } },
          commerce(partnerId),
        ),
        'REQUEST_INVALID',
      );
      expect(error.errors).toEqual([
        expect.objectContaining({ pointer: '/change/extraPrepMinutes' }),
      ]);
    }
    const past = await expectAppError(
      client.request(
        subjects.stores.setStatus,
        {
          storeId,
          change: { status: 'busy', extraPrepMinutes: 10, resumeAt: '2026-12-21T17:59:59Z' },
        },
        commerce(partnerId),
      ),
      'REQUEST_INVALID',
    );
    expect(past.errors).toEqual([expect.objectContaining({ pointer: '/resumeAt' })]);
    expect(
      (await client.request(subjects.stores.getStatus, { storeId }, commerce(partnerId))).status,
    ).toBe('online');
    // 5 and 120 are the bounds.
    for (const extraPrepMinutes of [5, 120]) {
      const status = await client.request(
        subjects.stores.setStatus,
        { storeId, change: { status: 'busy', extraPrepMinutes } },
        commerce(partnerId),
      );
      expect(status).toMatchObject({ status: 'busy', extraPrepMinutes, resumeAt: null });
    }
  });

  it('is replaced by a pause and the pause by online, the columns kept consistent', async () => {
    const { partnerId, storeId } = await newStore();
    await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'busy', extraPrepMinutes: 30 } },
      commerce(partnerId),
    );
    const paused = await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'paused', reason: 'staff_shortage' } },
      commerce(partnerId),
    );
    expect(paused).toMatchObject({ status: 'paused', extraPrepMinutes: null, pausedBy: 'partner' });
    const row = await db
      .selectFrom('stores')
      .select(['status', 'extra_prep_minutes', 'paused_by'])
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'paused', extra_prep_minutes: null, paused_by: 'partner' });
    // The database refuses a busy row without its minutes.
    await expect(
      db
        .updateTable('stores')
        .set({ status: 'busy', paused_by: null })
        .where('store_id', '=', storeId)
        .execute(),
    ).rejects.toThrow(/stores_extra_prep_minutes_busy/);
  });
});

describe('acceptanceWindowSeconds', () => {
  it('is 600 unless the profile sets 60..3,600, and shows in every view', async () => {
    const { partnerId, storeId, store } = await newStore();
    expect(store.acceptanceWindowSeconds).toBe(600);
    const { store: replaced } = await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile({ acceptanceWindowSeconds: 120 }) },
      commerce(partnerId),
    );
    expect(replaced.acceptanceWindowSeconds).toBe(120);
    expect(
      (await client.request(subjects.stores.lookup, { storeId }, distribution()))
        .acceptanceWindowSeconds,
    ).toBe(120);
    expect(
      (await client.request(subjects.stores.orderContext, { storeId }, distribution())).store
        .acceptanceWindowSeconds,
    ).toBe(120);
    for (const acceptanceWindowSeconds of [59, 3_601, 600.5]) {
      const error = await expectAppError(
        client.request(
          subjects.stores.upsert,
          { storeId, profile: storeProfile({ acceptanceWindowSeconds }) },
          commerce(partnerId),
        ),
        'REQUEST_INVALID',
      );
      expect(error.errors).toEqual([
        expect.objectContaining({ pointer: '/profile/acceptanceWindowSeconds' }),
      ]);
    }
  });
});
