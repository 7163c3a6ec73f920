import { exampleStoreAddress, subjects, type PartnerMode } from '@pcp/contracts';
import { createDatabase, type RequestContext, type ServiceInstance } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import {
  createStoresService,
  STORES_SCHEMA,
  storesEnvSchema,
  type StoresDatabase,
} from '../../src/app.js';
import { createStoreRowCache } from '../../src/db/store-row-cache.js';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';

// stores.v1.lookup answers from a per-replica row cache: dropped by the replica's own writes
// and by every replica's store events, bounded by bytes and by a TTL.

const TTL_MS = 3_000;
let stores: StoresUnderTest;
let replicaB: ServiceInstance;
let dbB: Kysely<StoresDatabase>;

const commerce = (partnerId: string, mode: PartnerMode = 'live'): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'commerce',
  mode,
});
const distribution = (mode: PartnerMode = 'live'): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode,
});

async function createStore(mode: PartnerMode = 'live') {
  const partnerId = randomUUID();
  const storeId = randomUUID();
  const profile = storeProfile({
    name: 'Cached Burgers',
    address: exampleStoreAddress,
    availability: alwaysOpen,
  });
  await stores.client.request(
    subjects.stores.upsert,
    { storeId, profile },
    commerce(partnerId, mode),
  );
  return { partnerId, storeId, profile };
}

const lookup = (storeId: string, mode: PartnerMode = 'live') =>
  stores.client.request(subjects.stores.lookup, { storeId }, distribution(mode));

/** A write no replica hears of: another replica's profile change, which sends no event. */
const renameBehindTheCache = (storeId: string, name: string) =>
  stores.db.updateTable('stores').set({ name }).where('store_id', '=', storeId).execute();

/** Enough lookups that both replicas (one queue group) answer some, nearly surely. */
const LOOKUPS = 24;
const lookups = (storeId: string) =>
  Promise.all(Array.from({ length: LOOKUPS }, () => lookup(storeId)));

beforeAll(async () => {
  const config = { STORES_ROW_CACHE_TTL_MS: TTL_MS };
  stores = await startStoresUnderTest({ config });
  // A second replica on the same database and subjects.
  dbB = createDatabase<StoresDatabase>({
    url: stores.env.databaseUrl,
    schema: STORES_SCHEMA,
    applicationName: 'test-b',
  });
  replicaB = createStoresService({
    nc: stores.env.nc,
    logger: stores.env.logger,
    metrics: stores.env.newMetrics('stores-b'),
    subjectPrefix: stores.env.prefix,
    requestTimeoutMs: 5_000,
    db: dbB,
    config: { ...storesEnvSchema.parse({}), ...config },
  });
  await replicaB.start();
});

afterAll(async () => {
  await replicaB?.stop(5_000);
  await dbB?.destroy();
  await stores?.stop();
});

describe('the lookup row cache', () => {
  it('answers from memory until the TTL, then reads the row anew', async () => {
    const { storeId } = await createStore();
    await lookups(storeId);
    await renameBehindTheCache(storeId, 'Renamed Behind');
    expect((await lookup(storeId)).name).toBe('Cached Burgers');
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 100));
    const names = (await lookups(storeId)).map((store) => store.name);
    expect(new Set(names)).toEqual(new Set(['Renamed Behind']));
  });

  it("shows a write on one replica in the other's lookups once its store event arrives, well within the TTL", async () => {
    const { partnerId, storeId } = await createStore();
    // Both replicas cache the store as online.
    expect(new Set((await lookups(storeId)).map((store) => store.status))).toEqual(
      new Set(['online']),
    );
    const changed = Date.now();
    // Served by one of the two; the other hears of it only through the store event.
    await stores.client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'paused', reason: 'too_busy' } },
      commerce(partnerId),
    );
    let statuses: string[] = [];
    while (Date.now() - changed < TTL_MS / 2) {
      statuses = (await lookups(storeId)).map((store) => store.status);
      if (statuses.every((status) => status === 'paused')) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(new Set(statuses)).toEqual(new Set(['paused']));
    expect(Date.now() - changed).toBeLessThan(TTL_MS / 2);
  });

  it('shows the replica its own write at once', async () => {
    const { partnerId, storeId, profile } = await createStore();
    await lookups(storeId);
    await stores.client.request(
      subjects.stores.upsert,
      { storeId, profile: { ...profile, name: 'Renamed Here' } },
      commerce(partnerId),
    );
    // The upsert went to one replica; a lookup the other answers may still be cached.
    const names = await Promise.all(
      Array.from({ length: LOOKUPS }, async () => (await lookup(storeId)).name),
    );
    expect(names).toContain('Renamed Here');
  });

  it.each(['live', 'test'] as const)(
    'never shows a cached %s store to a request of the other mode',
    async (mode) => {
      const { storeId } = await createStore(mode);
      expect((await lookup(storeId, mode)).storeId).toBe(storeId);
      await expectAppError(lookup(storeId, mode === 'live' ? 'test' : 'live'), 'STORE_NOT_FOUND');
      expect((await lookup(storeId, mode)).storeId).toBe(storeId);
    },
  );

  it('holds no more rows than its bytes allow, dropping the least recently used', async () => {
    const created = [];
    for (let i = 0; i < 12; i++) created.push(await createStore());
    const [first, ...rest] = created.map((store) => store.storeId) as [string, ...string[]];
    // A row of a store with weekly hours counts about 2.5 KB: room for about 4.
    const cache = createStoreRowCache(stores.db, { maxBytes: 10_000, ttlMs: 60_000 });
    await cache.lookup(first, 'live');
    await renameBehindTheCache(first, 'Still Cached');
    expect((await cache.lookup(first, 'live'))?.name).toBe('Cached Burgers');
    for (const storeId of rest) await cache.lookup(storeId, 'live');
    // Evicted by the others, so read anew.
    expect((await cache.lookup(first, 'live'))?.name).toBe('Still Cached');
    const last = rest.at(-1)!;
    await renameBehindTheCache(last, 'Last Renamed');
    expect((await cache.lookup(last, 'live'))?.name).toBe('Cached Burgers');
  });
});
