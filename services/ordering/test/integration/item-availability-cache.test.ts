import {
  dayOfWeek,
  events,
  subjects,
  type ItemAvailabilityList,
  type MarketfrontStore,
  type OrderRequest,
} from '@pcp/contracts';
import {
  AppError,
  createBusClient,
  createDatabase,
  handle,
  handleBytes,
  loadConfig,
  serveSubjects,
  type BusClient,
  type ServedService,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '../../src/app.js';
import {
  createItemAvailabilityCache,
  overridesBytes,
} from '../../src/catalog/item-availability-cache.js';

// Stores and catalog stand in as responders on real NATS: the stores side of overrides is
// another service's; here its answers and its events are the test's to choose.
const storeId = randomUUID();
const { document, ids } = cartTestCatalog(storeId);
const documentBytes = Buffer.from(JSON.stringify(document));
const versionId = randomUUID();

/** The stand-in stores service's overrides, by store (absent: version 0, none). */
const overridesOf = new Map<string, ItemAvailabilityList>();
const lookups: string[] = [];
/** Held open to keep a lookup in flight; set to make lookups fail. */
let lookupAnswers = Promise.resolve();
let lookupsFail = false;

const storeView = (id: string): MarketfrontStore => ({
  storeId: id,
  name: 'Overrides Test Kitchen',
  phone: '+15551234567',
  timezone: 'America/Chicago',
  currency: 'USD',
  address: {
    address1: '1 Main St',
    address2: null,
    city: 'Chicago',
    state: 'IL',
    postalCode: '60601',
    country: 'US',
    latitude: 41.88,
    longitude: -87.63,
  },
  fulfillmentTypes: ['PICKUP'],
  availability: [],
  delivery: null,
  pickup: { etaMinutes: 15 },
  taxRate: 0,
  minimumOrder: 0,
  status: 'online',
  extraPrepMinutes: null,
  acceptanceWindowSeconds: 600,
  isOpenNow: true,
  nextOpenAt: null,
  catalogSetId: document.catalogSetId,
});

const listOf = (id: string): ItemAvailabilityList =>
  overridesOf.get(id) ?? { items: [], version: 0 };

/** A change at the stand-in stores: the new version, announced or (a missed event) not. */
async function setOverrides(
  id: string,
  items: { itemId: string; until: string | null }[],
  announce: boolean,
): Promise<number> {
  const version = listOf(id).version + 1;
  overridesOf.set(id, {
    version,
    items: items.map((item) => ({ ...item, available: false as const })),
  });
  if (announce) {
    const event: unknown = {
      id: randomUUID(),
      type: 'stores.v1.store-changed',
      occurredAt: new Date().toISOString(),
      version,
      data: {
        event: 'store.items_availability_changed',
        storeId: id,
        itemAvailabilityVersion: version,
        items: items.map((item) => ({ ...item, available: false })),
      },
    };
    env.nc.publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(event));
    await env.nc.flush();
  }
  return version;
}

/** Open around the clock, every day. */
const allWeek = dayOfWeek.options.map((day) => ({
  dayOfWeek: day,
  start: '00:00:00',
  end: '00:00:00',
}));

/** The injected clock both replicas read; each counts its reads to tell who answered. */
let now = new Date('2026-11-27T15:00:00.000Z');
const reads = { a: 0, b: 0 };

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
const served: ServedService[] = [];
const replicas: ReturnType<typeof createOrderingService>[] = [];
const partner = {
  partnerId: randomUUID(),
  partnerKind: 'distribution' as const,
  mode: 'live' as const,
  paymentTypes: ['CARD' as const, 'PAY_AT_STORE' as const],
};
const ctx = () => ({ requestId: randomUUID(), ...partner });

const orderFor = (itemId: string, scheduledTime?: string): OrderRequest => ({
  cart: {
    catalogSetId: document.catalogSetId,
    storeId,
    lineItems: [{ itemId, lineItemId: randomUUID(), quantity: 1 }],
  },
  fulfillment: scheduledTime
    ? { mode: 'PICKUP', scheduleType: 'SCHEDULED', scheduledTime }
    : { mode: 'PICKUP', scheduleType: 'ASAP' },
  client: { ip: '8.8.4.4', userAgent: 'test' },
  paymentType: 'PAY_AT_STORE',
  tip: 0,
});

const validate = (order: OrderRequest) => bus.request(subjects.ordering.validate, order, ctx());

/** Codes and pointers of `count` validates (the queue group spreads them over both replicas). */
async function validateMany(order: OrderRequest, count = 12) {
  const answers = await Promise.all(Array.from({ length: count }, () => validate(order)));
  return answers.map((answer) => answer.errors.map(({ code, pointer }) => ({ code, pointer })));
}

/** A burger with the given side (its required group) and nothing else. */
const burgerWith = (side: string): OrderRequest => {
  const order = orderFor(ids.burger);
  const [burger] = order.cart.lineItems;
  return {
    ...order,
    cart: {
      ...order.cart,
      lineItems: [
        {
          ...burger!,
          modifierGroups: [
            {
              modifierGroupId: ids.side,
              lineItems: [{ itemId: side, lineItemId: randomUUID(), quantity: 1 }],
            },
          ],
        },
      ],
    },
  };
};

const unavailableAtLine = [{ code: 'ITEM_UNAVAILABLE', pointer: '/cart/lineItems/0' }];

beforeAll(async () => {
  env = await createTestEnvironment();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  const options = { version: '0.0.1', prefix: env.prefix, timeoutMs: 5_000, logger: env.logger };
  const active = (id: string) => ({
    storeId: id,
    catalogSetId: document.catalogSetId,
    currency: 'USD',
    etag: `"${versionId}"`,
    versionId,
    activatedAt: '2026-01-01T00:00:00.000Z',
  });
  served.push(
    await serveSubjects(env.nc, { ...options, service: 'catalog' }, [
      handle(subjects.catalog.active, async ({ storeId: id }) => active(id)),
      handle(subjects.catalog.document, async ({ storeId: id }) => ({
        ...active(id),
        notModified: false,
        totalBytes: documentBytes.length,
        chunks: 1,
      })),
      handleBytes(subjects.catalog.documentChunk, async () => documentBytes),
    ]),
    await serveSubjects(env.nc, { ...options, service: 'stores' }, [
      handle(subjects.stores.lookup, async ({ storeId: id }) => storeView(id)),
      handle(subjects.stores.orderProfile, async ({ storeId: id }) => {
        const {
          status: _s,
          extraPrepMinutes: _e,
          isOpenNow: _o,
          nextOpenAt: _n,
          ...store
        } = storeView(id);
        return {
          store: { ...store, availability: allWeek },
          status: { status: 'online' as const, resumeAt: null, extraPrepMinutes: null },
          specialDays: [],
          ownerPartnerId: randomUUID(),
          itemAvailabilityVersion: listOf(id).version,
          submission: null,
        };
      }),
      handle(subjects.stores.lookupItemAvailability, async ({ storeId: id }) => {
        lookups.push(id);
        // The answer is what the store had when asked, even if it changes while held.
        const answer = listOf(id);
        await lookupAnswers;
        if (lookupsFail) throw new AppError('SERVICE_UNAVAILABLE', 'stores is down');
        return answer;
      }),
    ]),
  );
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-item-availability',
  });
  for (const name of ['a', 'b'] as const) {
    const replica = createOrderingService({
      nc: env.nc,
      logger: env.logger,
      metrics: env.newMetrics('ordering'),
      subjectPrefix: env.prefix,
      requestTimeoutMs: 5_000,
      db,
      config: loadConfig(orderingEnvSchema, {}),
      clock: () => {
        reads[name]++;
        return now;
      },
    });
    await replica.start();
    replicas.push(replica);
  }
});

afterAll(async () => {
  for (const replica of replicas) await replica.stop(5_000);
  for (const service of served) await service.stop();
  await db?.destroy();
  await env?.cleanup();
});

beforeEach(() => {
  lookups.length = 0;
  lookupAnswers = Promise.resolve();
  lookupsFail = false;
});

describe('overrides across two ordering replicas', () => {
  it('asks stores nothing while a store has never had an override (version 0)', async () => {
    expect(await validateMany(orderFor(ids.soda))).toEqual(Array(12).fill([]));
    expect(lookups).toEqual([]);
  });

  it('a change with its event is refused by the next validate and cart on either replica', async () => {
    await setOverrides(storeId, [], true);
    // Both replicas price the store at the new version (one lookup each at most).
    reads.a = reads.b = 0;
    expect(await validateMany(orderFor(ids.soda), 16)).toEqual(Array(16).fill([]));
    expect(reads.a).toBeGreaterThan(0);
    expect(reads.b).toBeGreaterThan(0);
    expect(lookups.length).toBeLessThanOrEqual(2);

    // Versions equal: no request at all.
    lookups.length = 0;
    await validateMany(orderFor(ids.soda));
    expect(lookups).toEqual([]);

    const until = new Date(now.getTime() + 3_600_000).toISOString();
    await setOverrides(storeId, [{ itemId: ids.soda, until }], true);
    // Each replica fetches the announced version once, ahead of use.
    await expect.poll(() => lookups.length).toBe(2);
    reads.a = reads.b = 0;
    expect(await validateMany(orderFor(ids.soda), 16)).toEqual(Array(16).fill(unavailableAtLine));
    expect(reads.a).toBeGreaterThan(0);
    expect(reads.b).toBeGreaterThan(0);
    expect(lookups).toHaveLength(2);

    const carts = await Promise.all(
      Array.from({ length: 8 }, () =>
        expectAppError(
          bus.request(
            subjects.ordering.cartAdd,
            {
              cart: null,
              storeId,
              catalogSetId: document.catalogSetId,
              item: { itemId: ids.soda, lineItemId: randomUUID(), quantity: 1 },
            },
            ctx(),
          ),
          'CART_INVALID',
        ),
      ),
    );
    for (const refused of carts) {
      expect(refused.errors).toEqual([
        {
          code: 'ITEM_UNAVAILABLE',
          message: `Soda is not available until ${until}`,
          pointer: '/item',
        },
      ]);
    }
    // Other items are priced as before.
    expect(await validateMany(burgerWith(ids.salad), 4)).toEqual(Array(4).fill([]));
  });

  it('a change whose event was missed is seen by validate once the cached profile expires', async () => {
    await setOverrides(storeId, [{ itemId: ids.fries, until: null }], false);
    // The profile each replica keeps names the old version for at most its 5 s.
    await new Promise((resolve) => setTimeout(resolve, 5_100));
    expect(await validateMany(burgerWith(ids.fries), 16)).toEqual(
      Array(16).fill([
        { code: 'ITEM_UNAVAILABLE', pointer: '/cart/lineItems/0/modifierGroups/0/lineItems/0' },
      ]),
    );
    // One lookup per replica, however many validates arrived together.
    expect(lookups.length).toBeGreaterThanOrEqual(1);
    expect(lookups.length).toBeLessThanOrEqual(2);
    // The soda's override was cleared by that change.
    expect(await validateMany(orderFor(ids.soda), 4)).toEqual(Array(4).fill([]));
  });

  it('takes an item back when the injected clock passes its until, and reads it at the order time', async () => {
    const until = new Date(now.getTime() + 30 * 60_000);
    await setOverrides(storeId, [{ itemId: ids.soda, until: until.toISOString() }], true);
    expect(await validateMany(orderFor(ids.soda), 4)).toEqual(Array(4).fill(unavailableAtLine));
    // An order scheduled after until is taken now.
    const later = new Date(until.getTime() + 15 * 60_000).toISOString();
    expect(await validateMany(orderFor(ids.soda, later), 4)).toEqual(Array(4).fill([]));
    lookups.length = 0;
    const before = now;
    now = new Date(until.getTime());
    try {
      expect(await validateMany(orderFor(ids.soda), 4)).toEqual(Array(4).fill([]));
    } finally {
      now = before;
    }
    expect(lookups).toEqual([]);
  });
});

describe('hostile store events', () => {
  it('ignores what is not an event (bad JSON included), other kinds and malformed items events', async () => {
    const subject = `${env.prefix}.${events.storeChanged.subject}`;
    const envelope = (data: unknown) =>
      JSON.stringify({
        id: randomUUID(),
        type: 'stores.v1.store-changed',
        occurredAt: new Date().toISOString(),
        version: 99,
        data,
      });
    const current = listOf(storeId).version;
    const [answered] = await validateMany(orderFor(ids.soda), 8);
    lookups.length = 0;
    for (const payload of [
      'not json {',
      '',
      JSON.stringify({ nothing: true }),
      envelope({
        event: 'store.status_changed',
        storeId,
        status: 'online',
        reason: null,
        pausedAt: null,
        resumeAt: null,
        extraPrepMinutes: null,
        pausedBy: null,
      }),
      envelope({
        event: 'store.items_availability_changed',
        storeId,
        itemAvailabilityVersion: -1,
        items: [],
      }),
      envelope({
        event: 'store.items_availability_changed',
        storeId: 'not-a-guid',
        itemAvailabilityVersion: current + 5,
        items: [],
      }),
    ]) {
      env.nc.publish(subject, payload);
    }
    // The catalog activations' subscription shares the defence (a throw closes the connection).
    env.nc.publish(`${env.prefix}.${events.catalogActivated.subject}`, 'not json {');
    await env.nc.flush();
    // Both replicas still answer, asked stores nothing, and wait for no version it lacks.
    expect(await validateMany(orderFor(ids.soda), 8)).toEqual(Array(8).fill(answered));
    expect(lookups).toEqual([]);
    for (const replica of replicas) expect(replica.serving()).toBe(true);
  });
});

describe('the cache on its own', () => {
  const newCache = (maxBytes = 1024 * 1024, cartRecheckAfterMs?: number) =>
    createItemAvailabilityCache({
      bus,
      logger: env.logger,
      maxBytes,
      ...(cartRecheckAfterMs === undefined ? {} : { cartRecheckAfterMs }),
    });
  const overridesFor = (count: number) =>
    Array.from({ length: count }, () => ({ itemId: randomUUID(), until: null }));

  it('asks once for a cold store however many carts arrive together', async () => {
    const id = randomUUID();
    await setOverrides(id, overridesFor(3), false);
    const cache = newCache();
    const answers = await Promise.all(Array.from({ length: 20 }, () => cache.forCart(id, ctx())));
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]?.until.size).toBe(3);
    expect(lookups).toEqual([id]);
    expect((await cache.forOrder(id, 1, ctx())).version).toBe(1);
    expect(lookups).toHaveLength(1);
  });

  it('asks again when a lookup in flight predates the version an order context named', async () => {
    const id = randomUUID();
    await setOverrides(id, [], false);
    const cache = newCache();
    await cache.forCart(id, ctx());
    let open!: () => void;
    lookupAnswers = new Promise((resolve) => (open = resolve));
    // An order context named version 2, but the lookup answers what stores had before it.
    const waiting = cache.forOrder(id, 2, ctx());
    await expect.poll(() => lookups.length).toBe(2);
    await setOverrides(id, overridesFor(2), false);
    open();
    const seen = await waiting;
    expect(seen.version).toBe(2);
    expect(seen.until.size).toBe(2);
    expect(lookups).toHaveLength(3);
  });

  it('ignores events of stores it never priced, and old versions of those it did', async () => {
    const id = randomUUID();
    const cache = newCache();
    cache.changed(id, 4, randomUUID());
    expect(lookups).toEqual([]);
    await setOverrides(id, overridesFor(1), false);
    // The first cart asks for the announced version (stores has only 1: it asks 3 times).
    expect((await cache.forCart(id, ctx())).version).toBe(1);
    expect(lookups).toHaveLength(3);
    // Stores is the authority: the next carts do not ask for a version it does not have.
    await cache.forCart(id, ctx());
    expect(lookups).toHaveLength(3);
    lookups.length = 0;
    cache.changed(randomUUID(), 1, randomUUID());
    const known = randomUUID();
    await setOverrides(known, [], false);
    await cache.forCart(known, ctx());
    cache.changed(known, 1, randomUUID());
    cache.changed(known, 0, randomUUID());
    expect(lookups).toEqual([known]);
  });

  it('keeps its entries within the byte budget, evicting the least recently used', async () => {
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of [a, b, c]) await setOverrides(id, overridesFor(1_000), false);
    const one = overridesBytes(await newCache().forCart(a, ctx()));
    lookups.length = 0;
    const cache = newCache(Math.floor(one * 2.5));
    await cache.forCart(a, ctx());
    await cache.forCart(b, ctx());
    await cache.forCart(a, ctx());
    expect(lookups).toEqual([a, b]);
    await cache.forCart(c, ctx()); // over budget: b goes, not a
    await cache.forCart(a, ctx());
    expect(lookups).toEqual([a, b, c]);
    await cache.forCart(b, ctx());
    expect(lookups).toEqual([a, b, c, b]);
  });

  it('prices carts with the last overrides it had when stores cannot answer; orders fail', async () => {
    const id = randomUUID();
    await setOverrides(id, overridesFor(2), false);
    const cache = newCache();
    await cache.forCart(id, ctx());
    await setOverrides(id, overridesFor(5), false);
    cache.changed(id, 2, randomUUID());
    lookupsFail = true;
    await expect.poll(() => lookups.length).toBeGreaterThanOrEqual(2);
    expect((await cache.forCart(id, ctx())).until.size).toBe(2);
    await expectAppError(cache.forOrder(id, 2, ctx()), 'SERVICE_UNAVAILABLE');
    await expectAppError(newCache().forCart(id, ctx()), 'SERVICE_UNAVAILABLE');
    lookupsFail = false;
    expect((await cache.forOrder(id, 2, ctx())).until.size).toBe(5);
  });

  it('rechecks a cart entry in the background once it has gone unconfirmed a while', async () => {
    const id = randomUUID();
    await setOverrides(id, overridesFor(1), false);
    const cache = newCache(1024 * 1024, 50);
    await cache.forCart(id, ctx());
    await cache.forCart(id, ctx());
    expect(lookups).toHaveLength(1);
    await setOverrides(id, overridesFor(3), false);
    await new Promise((resolve) => setTimeout(resolve, 80));
    // The cart is answered from the entry; the recheck brings the new version for the next.
    expect((await cache.forCart(id, ctx())).version).toBe(1);
    await expect.poll(async () => (await cache.forCart(id, ctx())).version).toBe(2);
  });
});
