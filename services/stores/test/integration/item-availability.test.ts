import { events, subjects, type StoreEventData } from '@pcp/contracts';
import {
  eventIdOf,
  handle,
  serveSubjects,
  AppError,
  type BusClient,
  type RequestContext,
  type ServedService,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { startStoresUnderTest, type StoresUnderTest } from '../support/stores-under-test.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { storeProfile } from '@pcp/testing/fixtures';
import type { StoresDatabase } from '../../src/app.js';

let stores: StoresUnderTest;
let env: TestEnvironment;
let db: Kysely<StoresDatabase>;
let catalog: ServedService;
let client: BusClient;
/** The service's clock; tests move it. */
let clockNow = new Date('2026-11-22T12:00:00.000Z');

/** The stand-in catalog: each store's active item ids (no entry: no catalog yet). */
const catalogItems = new Map<string, { itemIds: Set<string>; itemCount?: number }>();
let knownItemsCalls = 0;

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
const ordering = (): RequestContext => ({ requestId: randomUUID() });

beforeAll(async () => {
  stores = await startStoresUnderTest({ clock: () => clockNow });
  ({ env, db, client } = stores);
  catalog = await serveSubjects(
    env.nc,
    {
      service: 'catalog',
      version: '0.0.1',
      prefix: env.prefix,
      timeoutMs: 5_000,
      logger: env.logger,
    },
    [
      handle(subjects.catalog.knownItems, ({ storeId, itemIds }) => {
        knownItemsCalls++;
        const active = catalogItems.get(storeId);
        if (!active) {
          return Promise.reject(new AppError('CATALOGSET_NOT_FOUND', 'No active CatalogSet'));
        }
        return Promise.resolve({
          catalogSetId: randomUUID(),
          versionId: randomUUID(),
          itemCount: active.itemCount ?? active.itemIds.size,
          unknownItemIds: itemIds.filter((id) => !active.itemIds.has(id)),
        });
      }),
    ],
  );
});

afterAll(async () => {
  await catalog?.stop();
  await stores?.stop();
});

/** A store of a new partner whose active catalog has `items` items. */
async function storeWithCatalog(items = 3, profile = storeProfile()) {
  const partnerId = randomUUID();
  const storeId = randomUUID();
  await client.request(subjects.stores.upsert, { storeId, profile }, commerce(partnerId));
  const itemIds = Array.from({ length: items }, () => randomUUID());
  catalogItems.set(storeId, { itemIds: new Set(itemIds) });
  return { partnerId, storeId, itemIds, ctx: commerce(partnerId) };
}

/** The store's events in the outbox, in publish order. */
async function storeEvents(storeId: string) {
  const rows = await db
    .selectFrom('outbox')
    .select(['aggregate_version', 'payload', 'subject'])
    .where('aggregate_type', '=', 'store')
    .where('aggregate_id', '=', storeId)
    .orderBy('sequence')
    .execute();
  return rows.map((row) => {
    const envelope = events.storeChanged.schema.parse(row.payload);
    expect(row.subject).toBe(`${env.prefix}.${events.storeChanged.subject}`);
    expect(envelope.version).toBe(row.aggregate_version);
    return envelope;
  });
}
const kinds = (list: { data: StoreEventData }[]) => list.map((event) => event.data.event);

const pointers = (error: AppError) => error.errors?.map((element) => element.pointer);

describe('item availability overrides', () => {
  it('sets, reads and clears overrides, one version and one event per change', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog();
    const [a, b] = itemIds as [string, string];
    const until = '2026-11-23T06:00:00.000Z';
    const set = await client.request(
      subjects.stores.setItemAvailability,
      {
        storeId,
        items: [
          { itemId: a, available: false, until },
          { itemId: b, available: false },
        ],
      },
      ctx,
    );
    expect(set.version).toBe(1);
    expect(set.items).toEqual(
      [
        { itemId: a, available: false, until },
        { itemId: b, available: false, until: null },
      ].sort((x, y) => x.itemId.localeCompare(y.itemId)),
    );
    expect(await client.request(subjects.stores.getItemAvailability, { storeId }, ctx)).toEqual(
      set,
    );
    expect(
      await client.request(subjects.stores.lookupItemAvailability, { storeId }, distribution()),
    ).toEqual(set);
    // Ordering's caches refresh on an event, with no partner behind the request.
    expect(
      await client.request(subjects.stores.lookupItemAvailability, { storeId }, ordering()),
    ).toEqual(set);

    const cleared = await client.request(
      subjects.stores.setItemAvailability,
      { storeId, items: [{ itemId: a, available: true }] },
      ctx,
    );
    expect(cleared).toEqual({ items: [{ itemId: b, available: false, until: null }], version: 2 });

    const recorded = await storeEvents(storeId);
    expect(recorded.map((event) => event.data)).toEqual([
      {
        event: 'store.items_availability_changed',
        storeId,
        itemAvailabilityVersion: 1,
        items: [
          { itemId: a, available: false, until },
          { itemId: b, available: false, until: null },
        ],
        mode: 'live',
      },
      {
        event: 'store.items_availability_changed',
        storeId,
        itemAvailabilityVersion: 2,
        items: [{ itemId: a, available: true, until: null }],
        mode: 'live',
      },
    ]);
    expect(recorded.map((event) => event.version)).toEqual([1, 2]);
    // The order context names the version, so ordering's caches see a change they missed.
    const context = await client.request(subjects.stores.orderContext, { storeId }, distribution());
    expect(context.itemAvailabilityVersion).toBe(2);
  });

  it('hides an override once the clock passes its until', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog();
    const until = new Date(clockNow.getTime() + 3_600_000).toISOString();
    await client.request(
      subjects.stores.setItemAvailability,
      { storeId, items: [{ itemId: itemIds[0]!, available: false, until }] },
      ctx,
    );
    const saved = clockNow;
    try {
      clockNow = new Date(saved.getTime() + 3_600_000);
      const read = await client.request(subjects.stores.getItemAvailability, { storeId }, ctx);
      expect(read).toEqual({ items: [], version: 1 });
    } finally {
      clockNow = saved;
    }
  });

  it('refuses hostile changes with their pointers and changes nothing', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog(3);
    const [a, b, c] = itemIds as [string, string, string];
    const refuse = async (items: unknown[], expected: string[]) => {
      const error = await expectAppError(
        client.request(subjects.stores.setItemAvailability, { storeId, items } as never, ctx),
        'REQUEST_INVALID',
      );
      expect(pointers(error)).toEqual(expected);
    };
    const off = (itemId: string, until?: string | null) => ({ itemId, available: false, until });
    // 1,001 entries: the subject's schema refuses it before any work.
    await expectAppError(
      client.request(
        subjects.stores.setItemAvailability,
        { storeId, items: Array.from({ length: 1_001 }, () => off(randomUUID())) },
        ctx,
      ),
      'REQUEST_INVALID',
    );
    await refuse([off(a), off(b), off(a)], ['/items/2/itemId']);
    await refuse([off(a, '2026-11-22T11:59:59Z')], ['/items/0/until']);
    await refuse([off(a, clockNow.toISOString())], ['/items/0/until']);
    await refuse([off(a, '2036-11-22T12:00:00Z')], ['/items/0/until']);
    await refuse(
      [{ itemId: a, available: true, until: '2026-11-23T00:00:00Z' }],
      ['/items/0/until'],
    );
    // A 3-item catalog and 4 overrides: the fourth is no item of it.
    const stranger = randomUUID();
    await refuse([off(a), off(b), off(c), off(stranger)], ['/items/3/itemId']);
    expect(await client.request(subjects.stores.getItemAvailability, { storeId }, ctx)).toEqual({
      items: [],
      version: 0,
    });
    expect(await storeEvents(storeId)).toEqual([]);
  });

  it('keeps a store’s overrides within its catalog’s item count', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog(3);
    // The catalog says 2 items while it knows 3: as if a smaller one was activated meanwhile.
    catalogItems.set(storeId, { itemIds: new Set(itemIds), itemCount: 2 });
    const error = await expectAppError(
      client.request(
        subjects.stores.setItemAvailability,
        { storeId, items: itemIds.map((itemId) => ({ itemId, available: false })) },
        ctx,
      ),
      'REQUEST_INVALID',
    );
    expect(pointers(error)).toEqual(['/items']);
    expect(await client.request(subjects.stores.getItemAvailability, { storeId }, ctx)).toEqual({
      items: [],
      version: 0,
    });
  });

  it('answers CATALOGSET_NOT_FOUND without a catalog, STORE_NOT_FOUND for another partner, FORBIDDEN to the wrong kind', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog();
    const items = [{ itemId: itemIds[0]!, available: false }];
    const other = commerce(randomUUID());
    await expectAppError(
      client.request(subjects.stores.setItemAvailability, { storeId, items }, other),
      'STORE_NOT_FOUND',
    );
    await expectAppError(
      client.request(subjects.stores.getItemAvailability, { storeId }, other),
      'STORE_NOT_FOUND',
    );
    await expectAppError(
      client.request(subjects.stores.getItemAvailability, { storeId }, distribution()),
      'FORBIDDEN',
    );
    await expectAppError(
      client.request(subjects.stores.lookupItemAvailability, { storeId }, ctx),
      'FORBIDDEN',
    );
    await expectAppError(
      client.request(
        subjects.stores.lookupItemAvailability,
        { storeId: randomUUID() },
        distribution(),
      ),
      'STORE_NOT_FOUND',
    );
    catalogItems.delete(storeId);
    await expectAppError(
      client.request(subjects.stores.setItemAvailability, { storeId, items }, ctx),
      'CATALOGSET_NOT_FOUND',
    );
  });
});

describe('stores.v1.item-availability.deny', () => {
  it('makes items unavailable until the end of the store’s local day, DST-exact', async () => {
    const cases = [
      // 2026-11-01 in Chicago is 25 hours long (CDT → CST): it ends at 06:00Z.
      { now: '2026-11-01T12:00:00.000Z', end: '2026-11-02T06:00:00.000Z' },
      // 2026-03-08 is 23 hours long (CST → CDT): it ends at 05:00Z.
      { now: '2026-03-08T12:00:00.000Z', end: '2026-03-09T05:00:00.000Z' },
      // 23:30 local on an ordinary day: the override lasts half an hour.
      { now: '2026-11-23T05:30:00.000Z', end: '2026-11-23T06:00:00.000Z' },
    ];
    const saved = clockNow;
    try {
      for (const { now, end } of cases) {
        clockNow = new Date(now);
        const { storeId, itemIds } = await storeWithCatalog();
        const denied = await client.request(
          subjects.stores.denyItems,
          { storeId, itemIds: [itemIds[0]!, itemIds[0]!] },
          ordering(),
        );
        expect(denied).toEqual({
          items: [{ itemId: itemIds[0]!, available: false, until: end }],
          version: 1,
        });
      }
    } finally {
      clockNow = saved;
    }
  });

  it('keeps an override that lasts longer, and refuses items of no catalog with /itemIds pointers', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog();
    const [a, b] = itemIds as [string, string];
    await client.request(
      subjects.stores.setItemAvailability,
      { storeId, items: [{ itemId: a, available: false }] },
      ctx,
    );
    const denied = await client.request(
      subjects.stores.denyItems,
      { storeId, itemIds: [a, b] },
      ordering(),
    );
    expect(denied.version).toBe(2);
    expect(denied.items).toContainEqual({ itemId: a, available: false, until: null });
    expect(denied.items).toContainEqual({
      itemId: b,
      available: false,
      until: '2026-11-23T06:00:00.000Z',
    });
    const error = await expectAppError(
      client.request(
        subjects.stores.denyItems,
        { storeId, itemIds: [a, randomUUID()] },
        ordering(),
      ),
      'REQUEST_INVALID',
    );
    expect(pointers(error)).toEqual(['/itemIds/1']);
    await expectAppError(
      client.request(
        subjects.stores.denyItems,
        { storeId: randomUUID(), itemIds: [a] },
        ordering(),
      ),
      'STORE_NOT_FOUND',
    );
    const recorded = await storeEvents(storeId);
    expect(recorded.map((event) => event.version)).toEqual([1, 2]);
  });
});

describe('store events', () => {
  it('records status, hours, items and platform pauses in one version sequence per store, and publishes them', async () => {
    const { partnerId, storeId, itemIds, ctx } = await storeWithCatalog();
    await client.request(
      subjects.stores.setStatus,
      { storeId, change: { status: 'paused', reason: 'staff_shortage' } },
      ctx,
    );
    // A profile change that keeps the hours announces nothing; a new time zone does.
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile({ name: 'Renamed' }) },
      commerce(partnerId),
    );
    await client.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile({ timezone: 'America/New_York' }) },
      commerce(partnerId),
    );
    await client.request(
      subjects.stores.setItemAvailability,
      { storeId, items: [{ itemId: itemIds[0]!, available: false }] },
      ctx,
    );
    const paused = await client.request(subjects.stores.platformPause, { storeId }, ordering());
    expect(paused).toMatchObject({
      status: 'paused',
      reason: 'operational_issues',
      resumeAt: null,
      pausedBy: 'platform',
    });
    await client.request(
      subjects.stores.setSpecialHours,
      {
        storeId,
        days: [
          { date: '2026-12-25', closed: true },
          { date: '2026-11-01', closed: true },
        ],
      },
      ctx,
    );
    // A retry of the pause changes nothing and announces nothing.
    await client.request(subjects.stores.platformPause, { storeId }, ordering());

    const recorded = await storeEvents(storeId);
    expect(kinds(recorded)).toEqual([
      'store.status_changed',
      'store.hours_changed',
      'store.items_availability_changed',
      'store.status_changed',
      'store.hours_changed',
    ]);
    expect(recorded[4]!.data).toMatchObject({
      specialDays: [{ date: '2026-12-25', closed: true }],
    });
    expect(recorded.map((event) => event.version)).toEqual([1, 2, 3, 4, 5]);
    expect(recorded[0]!.data).toMatchObject({ status: 'paused', reason: 'staff_shortage' });
    expect(recorded[1]!.data).toMatchObject({ timezone: 'America/New_York', storeId });
    expect(recorded[3]!.data).toMatchObject({ status: 'paused', reason: 'operational_issues' });
    expect(new Set(recorded.map((event) => event.id)).size).toBe(5);
    expect(recorded[0]!.id).toBe(eventIdOf({ type: 'store', id: storeId, version: 1 }));

    // The relay publishes them to the events stream, in order.
    const jsm = await env.nc.jetstreamManager();
    const stream = await jsm.streams.find(`${env.prefix}.${events.storeChanged.subject}`);
    await expect
      .poll(
        async () =>
          (
            await db
              .selectFrom('outbox')
              .select('published_at')
              .where('aggregate_id', '=', storeId)
              .where('published_at', 'is', null)
              .execute()
          ).length,
      )
      .toBe(0);
    const last = await jsm.streams.getMessage(stream, {
      last_by_subj: `${env.prefix}.${events.storeChanged.subject}`,
    });
    expect(last.json<{ data: { storeId: string } }>().data.storeId).toBe(storeId);
  });

  it('answers STORE_NOT_FOUND to a platform pause of an unknown store', async () => {
    await expectAppError(
      client.request(subjects.stores.platformPause, { storeId: randomUUID() }, ordering()),
      'STORE_NOT_FOUND',
    );
  });
});

describe('catalog activation and overrides', () => {
  /** Publish an activation as the catalog's outbox does; `msgId` other than its id: a late copy. */
  async function activated(storeId: string, version: number, msgId?: string) {
    const catalogSetId = randomUUID();
    const event = {
      id: eventIdOf({ type: 'store-catalog', id: storeId, version }),
      type: 'catalog.v1.activated',
      occurredAt: new Date().toISOString(),
      version,
      data: {
        storeId,
        catalogSetId,
        versionId: randomUUID(),
        etag: `"v${version}"`,
        activatedAt: '2026-11-22T12:00:00.000Z',
      },
    };
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.catalogActivated.subject}`, JSON.stringify(event), {
        msgID: msgId ?? event.id,
      });
    return catalogSetId;
  }

  it('drops overrides of items the new catalog lacks, announcing the activation then the items', async () => {
    const { storeId, itemIds, ctx } = await storeWithCatalog(3);
    const [a, b, c] = itemIds as [string, string, string];
    await client.request(
      subjects.stores.setItemAvailability,
      { storeId, items: itemIds.map((itemId) => ({ itemId, available: false })) },
      ctx,
    );
    // The new catalog keeps a only.
    catalogItems.set(storeId, { itemIds: new Set([a]) });
    const catalogSetId = await activated(storeId, 1);
    await expect
      .poll(
        async () =>
          (await client.request(subjects.stores.getItemAvailability, { storeId }, ctx)).items,
      )
      .toEqual([{ itemId: a, available: false, until: null }]);
    const recorded = await storeEvents(storeId);
    expect(recorded.map((event) => event.data)).toEqual([
      expect.objectContaining({
        event: 'store.items_availability_changed',
        itemAvailabilityVersion: 1,
      }),
      {
        event: 'catalog.activated',
        storeId,
        catalogSetId,
        etag: '"v1"',
        activatedAt: '2026-11-22T12:00:00.000Z',
        mode: 'live',
      },
      {
        event: 'store.items_availability_changed',
        storeId,
        itemAvailabilityVersion: 2,
        items: [b, c].sort().map((itemId) => ({ itemId, available: true, until: null })),
        mode: 'live',
      },
    ]);
    const read = await client.request(subjects.stores.getItemAvailability, { storeId }, ctx);
    expect(read.version).toBe(2);

    // A redelivered or older activation changes nothing and asks the catalog nothing.
    const calls = knownItemsCalls;
    await activated(storeId, 1, randomUUID());
    const jsm = await env.nc.jetstreamManager();
    await expect
      .poll(async () => {
        const info = await jsm.consumers.info(`${env.prefix}_events`, 'stores-catalog-activated');
        return info.num_pending + info.num_ack_pending;
      })
      .toBe(0);
    expect(knownItemsCalls).toBe(calls);
    expect(await storeEvents(storeId)).toHaveLength(3);
  });

  it('announces an activation that drops nothing without an items event', async () => {
    const { storeId } = await storeWithCatalog(3);
    await activated(storeId, 1);
    await expect.poll(async () => kinds(await storeEvents(storeId))).toEqual(['catalog.activated']);
  });
});

describe('profile changes', () => {
  it('records every upsert of an existing store as an internal profile-changed event, no store event', async () => {
    const { partnerId, storeId } = await storeWithCatalog();
    const profileEvents = async () => {
      const rows = await db
        .selectFrom('outbox')
        .select(['aggregate_version', 'payload', 'subject'])
        .where('aggregate_type', '=', 'store-profile')
        .where('aggregate_id', '=', storeId)
        .orderBy('sequence')
        .execute();
      return rows.map((row) => {
        expect(row.subject).toBe(`${env.prefix}.${events.storeProfileChanged.subject}`);
        return events.storeProfileChanged.schema.parse(row.payload);
      });
    };
    // Creating the store is no change of a profile anyone holds.
    expect(await profileEvents()).toEqual([]);
    for (const minimumOrder of [12, 15]) {
      await client.request(
        subjects.stores.upsert,
        { storeId, profile: storeProfile({ minimumOrder }) },
        commerce(partnerId),
      );
    }
    const recorded = await profileEvents();
    expect(recorded.map((event) => [event.version, event.data])).toEqual([
      [1, { storeId, mode: 'live' }],
      [2, { storeId, mode: 'live' }],
    ]);
    // Partners' store events are untouched by it.
    expect(await storeEvents(storeId)).toEqual([]);
    const profile = await client.request(subjects.stores.orderProfile, { storeId }, distribution());
    expect(profile.store.minimumOrder).toBe(15);
  });
});
