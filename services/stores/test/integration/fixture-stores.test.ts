import {
  events,
  fixtureCommercePartnerId,
  fixtureStoreIds,
  subjects,
  type StoreEventData,
} from '@pcp/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoresService, storesEnvSchema } from '../../src/app.js';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';

/** The fixture store events (docs/guide/sandbox.md#store-events), every second here. */
const config = { ...storesEnvSchema.parse({}), STORES_FIXTURE_EVENT_INTERVAL_MS: 1_000 };

let stores: StoresUnderTest;
/** A second replica on the same database and subjects: the two share the schedule. */
let replica: ReturnType<typeof createStoresService>;

beforeAll(async () => {
  stores = await startStoresUnderTest({ config });
  replica = createStoresService({
    nc: stores.env.nc,
    logger: stores.env.logger,
    metrics: stores.env.newMetrics('stores-replica'),
    subjectPrefix: stores.env.prefix,
    requestTimeoutMs: 5_000,
    db: stores.db,
    config,
  });
  await replica.start();
});

afterAll(async () => {
  await replica?.stop(5_000);
  await stores?.stop();
});

/** The fixture stores' events in the outbox, in publish order. */
async function fixtureEvents(): Promise<StoreEventData[]> {
  const rows = await stores.db
    .selectFrom('outbox')
    .select('payload')
    .where('aggregate_type', '=', 'store')
    .where('aggregate_id', 'in', [...fixtureStoreIds])
    .orderBy('sequence')
    .execute();
  return rows.map((row) => events.storeChanged.schema.parse(row.payload).data);
}

describe('the fixture stores', () => {
  it('are seeded once, as test stores of the platform’s test tenant, open all week', async () => {
    const rows = await stores.db
      .selectFrom('stores')
      .select(['store_id', 'partner_id', 'mode', 'timezone', 'fulfillment_types', 'availability'])
      .where('partner_id', '=', fixtureCommercePartnerId)
      .orderBy('store_id')
      .execute();
    expect(rows.map((row) => [row.store_id, row.mode, row.timezone])).toEqual([
      [fixtureStoreIds[0], 'test', 'America/New_York'],
      [fixtureStoreIds[1], 'test', 'Europe/London'],
      [fixtureStoreIds[2], 'test', 'Asia/Tokyo'],
    ]);
    // New York delivers; London and Tokyo, whose addresses the geocoder cannot place, do not.
    expect(rows.map((row) => row.fulfillment_types)).toEqual([
      ['PICKUP', 'DELIVERY_BY_MERCHANT'],
      ['PICKUP'],
      ['PICKUP'],
    ]);
    for (const row of rows) expect(row.availability).toHaveLength(7);
    // The platform's stores as their owner reads them, through the partner API's subject.
    const store = await stores.client.request(
      subjects.stores.get,
      { storeId: fixtureStoreIds[1] },
      {
        requestId: 'fixture-read',
        partnerId: fixtureCommercePartnerId,
        partnerKind: 'commerce',
        mode: 'test',
      },
    );
    expect(store).toMatchObject({ storeId: fixtureStoreIds[1], currency: 'GBP' });
  });

  it('now and then go busy or pause, one event a turn across two replicas', async () => {
    // Due now (the migration makes the first one due ten minutes after the platform's first start).
    await sql`update fixture_store_events set next_at = now(), turn = 0`.execute(stores.db);
    const deadline = Date.now() + 20_000;
    while ((await fixtureEvents()).length < 6 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // Turn 6 marks an item out: with no catalog service here the change is refused, so it
    // rolls back and stays due; nothing more comes, and no turn was taken twice.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const seen = await fixtureEvents();
    // One store per turn, round robin: each goes busy for a minute, then each pauses for one.
    expect(
      seen.map((data) => [data.storeId, data.event === 'store.status_changed' && data.status]),
    ).toEqual([
      [fixtureStoreIds[0], 'busy'],
      [fixtureStoreIds[1], 'busy'],
      [fixtureStoreIds[2], 'busy'],
      [fixtureStoreIds[0], 'paused'],
      [fixtureStoreIds[1], 'paused'],
      [fixtureStoreIds[2], 'paused'],
    ]);
    for (const data of seen) {
      if (data.event !== 'store.status_changed') throw new Error('not a status event');
      // A minute from when the event was due; the handler stamps pausedAt a moment later.
      const minute = Date.parse(data.resumeAt!) - Date.parse(data.pausedAt!);
      expect(minute).toBeGreaterThan(58_000);
      expect(minute).toBeLessThanOrEqual(60_000);
    }
    const schedule = await stores.db
      .selectFrom('fixture_store_events')
      .select(['turn', 'next_at'])
      .executeTakeFirstOrThrow();
    expect(schedule.turn).toBe(6);
    expect(schedule.next_at.getTime()).toBeLessThanOrEqual(Date.now());
  }, 30_000);
});
