import { subjects, type PartnerMode } from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { storeProfile } from '@pcp/testing/fixtures';
import type { StoresDatabase } from '../../src/app.js';
import { deletePartnerStores } from '../../src/db/deleted-store-versions.repository.js';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';

// A store id's versions never go backwards across a sandbox reset and the store's re-creation
// (docs/guide/sandbox.md#reset).

let stores: StoresUnderTest;
let db: Kysely<StoresDatabase>;
let client: BusClient;

const commerce = (partnerId: string, mode: PartnerMode): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'commerce',
  mode,
});

beforeAll(async () => {
  stores = await startStoresUnderTest();
  ({ db, client } = stores);
});

afterAll(async () => {
  await stores?.stop();
});

const upsert = (storeId: string, partnerId: string, mode: PartnerMode) =>
  client.request(
    subjects.stores.upsert,
    { storeId, profile: storeProfile() },
    commerce(partnerId, mode),
  );

const pause = (storeId: string, partnerId: string, mode: PartnerMode) =>
  client.request(
    subjects.stores.setStatus,
    { storeId, change: { status: 'paused', reason: 'too_busy' } },
    commerce(partnerId, mode),
  );

const reset = (partnerId: string) =>
  client.request(subjects.stores.testReset, {}, commerce(partnerId, 'test'));

/** The versions of the store's events in the outbox, by aggregate. */
async function outboxVersions(storeId: string) {
  const rows = await db
    .selectFrom('outbox')
    .select(['aggregate_type', 'aggregate_version'])
    .where('aggregate_id', '=', storeId)
    .orderBy('aggregate_version')
    .execute();
  const of = (type: string) =>
    rows.filter((row) => row.aggregate_type === type).map((row) => Number(row.aggregate_version));
  return { store: of('store'), profile: of('store-profile') };
}

const itemAvailabilityVersion = async (storeId: string) =>
  (await client.request(subjects.stores.lookupItemAvailability, { storeId }, { requestId: '1' }))
    .version;

describe('a store id deleted by a sandbox reset', () => {
  it('continues its versions when another partner creates it again, in live mode', async () => {
    const owner = randomUUID();
    const storeId = randomUUID();
    await upsert(storeId, owner, 'test');
    await pause(storeId, owner, 'test');
    await upsert(storeId, owner, 'test');
    expect(await outboxVersions(storeId)).toEqual({ store: [1], profile: [1] });
    // As four changes of its item availability overrides would leave it.
    await db
      .updateTable('stores')
      .set({ item_availability_version: 4 })
      .where('store_id', '=', storeId)
      .execute();

    expect((await reset(owner)).deleted).toMatchObject({ 'stores.stores': 1 });
    const next = randomUUID();
    await upsert(storeId, next, 'live');
    await pause(storeId, next, 'live');
    await upsert(storeId, next, 'live');
    // Ordering holds the deleted store's overrides under version 4: the new one's are newer.
    expect(await itemAvailabilityVersion(storeId)).toBe(5);
    expect(await outboxVersions(storeId)).toEqual({ store: [2], profile: [2] });
  });

  it('keeps one row per id, the last deletion’s', async () => {
    const owner = randomUUID();
    const storeId = randomUUID();
    for (let round = 0; round < 2; round++) {
      await upsert(storeId, owner, 'test');
      await pause(storeId, owner, 'test');
      await reset(owner);
    }
    expect(
      await db
        .selectFrom('deleted_store_versions')
        .selectAll()
        .where('store_id', '=', storeId)
        .execute(),
    ).toMatchObject([{ event_version: 2, profile_version: 0, item_availability_version: 1 }]);
  });

  it('continues them when the create waited for the deletion in flight', async () => {
    const owner = randomUUID();
    const storeId = randomUUID();
    await upsert(storeId, owner, 'test');
    await pause(storeId, owner, 'test');
    let created: ReturnType<typeof upsert> | undefined;
    await db.transaction().execute(async (trx) => {
      await deletePartnerStores(trx, owner);
      // The create's insert waits on the deleted row until this transaction commits.
      created = upsert(storeId, owner, 'test');
      await vi.waitFor(async () => {
        const waiting = await sql<{ count: string }>`select count(*) from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
        expect(Number(waiting.rows[0]!.count)).toBeGreaterThan(0);
      });
    });
    expect((await created!).created).toBe(true);
    await pause(storeId, owner, 'test');
    expect((await outboxVersions(storeId)).store).toEqual([1, 2]);
  });
});
