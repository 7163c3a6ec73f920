import { events, exampleStoreAddress, subjects, type PartnerMode } from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import type { StoresDatabase } from '../../src/app.js';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';

// Stores are visible to other partners only in their owner's mode (docs/guide/sandbox.md#modes).

let stores: StoresUnderTest;
let db: Kysely<StoresDatabase>;
let client: BusClient;

const modes: readonly PartnerMode[] = ['live', 'test'];
const other = (mode: PartnerMode): PartnerMode => (mode === 'live' ? 'test' : 'live');

const commerce = (partnerId: string, mode: PartnerMode): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'commerce',
  mode,
});
const distribution = (mode: PartnerMode): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode,
});
/** The platform's own calls (ordering's caches on an event): no partner, every mode. */
const platform = (): RequestContext => ({ requestId: randomUUID() });

/** Nowhere near the other tests' stores, so discovery here sees only this file's. */
const pointOf = (latitude: number) => ({ latitude, longitude: -122.41 });

async function createStore(mode: PartnerMode, options: { latitude?: number; name?: string } = {}) {
  const partnerId = randomUUID();
  const storeId = randomUUID();
  const profile = storeProfile({
    name: options.name ?? 'Mission Burgers',
    address: { ...exampleStoreAddress, ...pointOf(options.latitude ?? 37.76) },
    availability: alwaysOpen,
  });
  await client.request(subjects.stores.upsert, { storeId, profile }, commerce(partnerId, mode));
  return { partnerId, storeId, profile };
}

beforeAll(async () => {
  stores = await startStoresUnderTest();
  ({ db, client } = stores);
});

afterAll(async () => {
  await stores?.stop();
});

describe.each(modes)('a store made by a %s key', (mode) => {
  let store: Awaited<ReturnType<typeof createStore>>;
  beforeAll(async () => {
    store = await createStore(mode);
  });

  it('is stored with that mode, and a later upsert keeps it', async () => {
    await client.request(
      subjects.stores.upsert,
      { storeId: store.storeId, profile: { ...store.profile, name: 'Mission Burgers 2' } },
      commerce(store.partnerId, mode),
    );
    const row = await db
      .selectFrom('stores')
      .select(['mode', 'name'])
      .where('store_id', '=', store.storeId)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ mode, name: 'Mission Burgers 2' });
  });

  it(`is found by lookup, orderContext, orderProfile and item availability of a ${mode} request`, async () => {
    const ctx = distribution(mode);
    const { storeId } = store;
    expect((await client.request(subjects.stores.lookup, { storeId }, ctx)).storeId).toBe(storeId);
    const context = await client.request(subjects.stores.orderContext, { storeId }, ctx);
    expect(context.store.storeId).toBe(storeId);
    const profile = await client.request(subjects.stores.orderProfile, { storeId }, ctx);
    expect(profile.store.storeId).toBe(storeId);
    expect(await client.request(subjects.stores.lookupItemAvailability, { storeId }, ctx)).toEqual({
      items: [],
      version: 0,
    });
  });

  it(`is STORE_NOT_FOUND to every read of a ${other(mode)} request, as an unknown id is`, async () => {
    const ctx = distribution(other(mode));
    const { storeId } = store;
    const unknown = await expectAppError(
      client.request(subjects.stores.lookup, { storeId: randomUUID() }, ctx),
      'STORE_NOT_FOUND',
    );
    const hidden = await expectAppError(
      client.request(subjects.stores.lookup, { storeId }, ctx),
      'STORE_NOT_FOUND',
    );
    expect(hidden.message).toBe(unknown.message);
    await expectAppError(
      client.request(subjects.stores.orderContext, { storeId }, ctx),
      'STORE_NOT_FOUND',
    );
    await expectAppError(
      client.request(subjects.stores.orderProfile, { storeId }, ctx),
      'STORE_NOT_FOUND',
    );
    await expectAppError(
      client.request(subjects.stores.lookupItemAvailability, { storeId }, ctx),
      'STORE_NOT_FOUND',
    );
  });

  it('is read by the platform’s own calls, which carry no partner', async () => {
    const { storeId } = store;
    expect(
      await client.request(subjects.stores.lookupItemAvailability, { storeId }, platform()),
    ).toEqual({ items: [], version: 0 });
  });

  it('keeps its owner’s reads and its mode when the owner’s other-mode tenant reuses its id', async () => {
    // The other mode's tenant is another partner id: the id is taken, as another partner's is.
    await expectAppError(
      client.request(
        subjects.stores.upsert,
        { storeId: store.storeId, profile: store.profile },
        commerce(randomUUID(), other(mode)),
      ),
      'STORE_NOT_FOUND',
    );
    const own = await client.request(
      subjects.stores.get,
      { storeId: store.storeId },
      commerce(store.partnerId, mode),
    );
    expect(own.storeId).toBe(store.storeId);
  });

  it('announces its events with its mode', async () => {
    await client.request(
      subjects.stores.setStatus,
      { storeId: store.storeId, change: { status: 'paused', reason: 'staff_shortage' } },
      commerce(store.partnerId, mode),
    );
    const rows = await db
      .selectFrom('outbox')
      .select('payload')
      .where('aggregate_type', '=', 'store')
      .where('aggregate_id', '=', store.storeId)
      .execute();
    expect(rows).toHaveLength(1);
    const envelope = events.storeChanged.schema.parse(rows[0]!.payload);
    expect(envelope.data).toMatchObject({ event: 'store.status_changed', mode });
  });
});

describe('stores.v1.discover', () => {
  const around = { latitude: 37.7, longitude: -122.41 };
  let byMode: Record<PartnerMode, string[]>;

  beforeAll(async () => {
    const made = await Promise.all(
      [0.001, 0.002, 0.003, 0.004].map((offset, index) =>
        createStore(index % 2 === 0 ? 'live' : 'test', {
          latitude: around.latitude + offset,
          name: 'Presidio Tacos',
        }),
      ),
    );
    byMode = {
      live: [made[0]!.storeId, made[2]!.storeId],
      test: [made[1]!.storeId, made[3]!.storeId],
    };
  });

  it.each(modes)(
    'returns only %s stores to a request of that mode, counted alone',
    async (mode) => {
      for (const fulfillmentType of ['PICKUP', 'DELIVERY_BY_MERCHANT'] as const) {
        const page = await client.request(
          subjects.stores.discover,
          { location: around, fulfillmentType, query: 'Presidio' },
          distribution(mode),
        );
        expect(page.stores.map((found) => found.storeId)).toEqual(byMode[mode]);
        expect(page.totalCount).toBe(2);
      }
      // The scheduled search walks candidates a batch at a time: the same filter.
      const scheduled = await client.request(
        subjects.stores.discover,
        {
          location: around,
          fulfillmentType: 'PICKUP',
          query: 'Presidio',
          scheduledTime: '2026-11-23T18:00:00.000Z',
        },
        distribution(mode),
      );
      expect(scheduled.stores.map((found) => found.storeId)).toEqual(byMode[mode]);
    },
  );

  it('returns every mode’s stores to the platform’s own calls', async () => {
    const page = await client.request(
      subjects.stores.discover,
      { location: around, fulfillmentType: 'PICKUP', query: 'Presidio' },
      platform(),
    );
    expect(page.totalCount).toBe(4);
  });
});
