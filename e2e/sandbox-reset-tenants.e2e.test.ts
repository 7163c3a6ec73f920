/**
 * A sandbox reset deletes the resetting partner's own test data and nothing of anyone else's
 * (docs/guide/sandbox.md#reset): a distribution partner's order at a commerce partner's test
 * store outlives the store's reset (readable, its deliveries listed, its Idempotency-Key
 * answering it, its charge kept), leaves the store side (no former or later owner of that
 * store id sees or moves it), and payments' and ordering's resets agree on which charges go.
 */
import { createPlatformClient, placeOrder, type PlatformClient } from '@pcp/client';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import { storeProfile } from '@pcp/testing/fixtures';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, refundSettled, sodaOrder, storeWithSodas } from './orders.js';
import { seedPlacedOrder } from './seed-order.js';
import { openSse, type OpenStream } from './sse.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** The acceptance window a store gets when its profile sets none. */
const WINDOW_MS = 600_000;
// Ordering reads this clock; a test moves it past the acceptance deadline.
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

type Partner = { partnerId: string; apiKey: string; client: PlatformClient };

let env: TestEnvironment;
let platform: TestPlatform;
let sandbox: ProcessorSimulator;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let receiver: WebhookReceiver;

beforeAll(async () => {
  env = await createTestEnvironment();
  sandbox = createProcessorSimulator();
  const sandboxUrl = await sandbox.listen();
  platform = await startPlatform(env, {
    clock,
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    paymentsEnv: { SANDBOX_PROCESSOR_URL: sandboxUrl },
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
      // The tests sweep when they mean to.
      ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '60000',
    },
  });
  host = await startCatalogHost();
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await host?.close();
  await platform?.stop();
  await sandbox?.close();
  await env?.cleanup();
});

/** A new partner with a test key; `partnerId` is its test tenant's. */
async function testPartner(kind: 'commerce' | 'distribution'): Promise<Partner> {
  const partner = await platform.newPartner(kind, { mode: 'test', paymentTypes: ['CARD'] });
  return {
    partnerId: partner.testPartnerId,
    apiKey: partner.apiKey,
    client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
  };
}

/** A distribution partner with a webhook endpoint for its order events. */
async function subscribedDistributor(): Promise<Partner> {
  const partner = await testPartner('distribution');
  const put = await partner.client.PUT('/v1/marketfront/webhooks', {
    body: { url: receiver.url, events: ['order.created', 'order.status_changed'] },
  });
  expect(put.response.status, JSON.stringify(put.error)).toBe(201);
  return partner;
}

const send = (method: string, path: string, partner: Partner, body?: unknown) =>
  call(platform.baseUrl, method, path, {
    apiKey: partner.apiKey,
    ...(body === undefined ? {} : { body }),
  });

/** The order ids of the partner's webhook deliveries. */
async function deliveredOrderIds(partner: Partner): Promise<string[]> {
  const listed = await send('GET', '/v1/marketfront/webhooks/deliveries?limit=100', partner);
  expect(listed.status, listed.text).toBe(200);
  return (listed.body.deliveries as { orderId: string | null }[]).map((row) => row.orderId!);
}

/** Card order of ten sodas at `store` by a new buyer of `market`, with Idempotency-Key `key`. */
async function cardOrder(
  market: Partner,
  store: Awaited<ReturnType<typeof storeWithSodas>>,
  key = randomUUID(),
) {
  const buyer = await newBuyer(market.client, '4242424242424242');
  const body = sodaOrder(store.ids, store.storeId, buyer.paymentId);
  const place = () =>
    placeOrder(market.client, { body, endUserId: buyer.endUser, idempotencyKey: key });
  const placed = await place();
  return { orderId: placed.order.orderId, place };
}

/** The charges (in payments) of an order, by the order id they were authorized for. */
const chargesOf = (orderId: string) =>
  platform.paymentsDb
    .selectFrom('charges')
    .select(['charge_id', 'status'])
    .where('order_id', '=', orderId)
    .execute();

/**
 * Payments and ordering agree: every charge has its order (naming it), and every order's
 * charge is there.
 */
async function expectChargesMatchOrders() {
  const charges = await platform.paymentsDb
    .selectFrom('charges')
    .select(['charge_id', 'order_id'])
    .execute();
  const orders = await platform.orderingDb
    .selectFrom('orders')
    .select(['order_id', 'charge_id'])
    .where('charge_id', 'is not', null)
    .execute();
  const byCharge = (rows: { charge_id: string | null; order_id: string | null }[]) =>
    Object.fromEntries(rows.map((row) => [row.charge_id, row.order_id]));
  expect(byCharge(charges)).toEqual(byCharge(orders));
}

describe('a commerce partner resets while another partner has an order at its store', () => {
  let commerce: Partner;
  let market: Partner;
  let store: Awaited<ReturnType<typeof storeWithSodas>>;
  let theirs: Awaited<ReturnType<typeof cardOrder>>;
  let ownTestOrderId: string;
  let reset: Awaited<ReturnType<typeof send>>;
  /** The live stream of the store id's next owner. */
  let nextOwnersStream: OpenStream | undefined;
  const key = randomUUID();

  afterAll(() => nextOwnersStream?.drop());

  beforeAll(async () => {
    commerce = await testPartner('commerce');
    market = await subscribedDistributor();
    // No submission URL: its orders wait pending for the store.
    store = await storeWithSodas(commerce.client, host, { orderSubmissionUrl: undefined });
    theirs = await cardOrder(market, store, key);
    // The store's own test order (the sandbox customer's, paid by card): the store's data.
    const own = await send('POST', `/v1/test/stores/${store.storeId}/orders`, commerce, {
      paymentType: 'CARD',
    });
    expect(own.status, own.text).toBe(201);
    ownTestOrderId = own.body.orderId as string;
    await vi.waitFor(
      async () => expect(await deliveredOrderIds(market)).toContain(theirs.orderId),
      {
        timeout: 20_000,
      },
    );
    await expectChargesMatchOrders();

    reset = await send('POST', '/v1/test/reset', commerce);
    expect(reset.status, reset.text).toBe(200);
  });

  it('deletes its store, and its own test order with its charge', async () => {
    expect(reset.body.deleted).toMatchObject({
      'stores.stores': 1,
      'ordering.orders': 1,
      'payments.charges': 1,
    });
    expect(await chargesOf(ownTestOrderId)).toEqual([]);
    await expectChargesMatchOrders();
  });

  it("leaves the other partner's order readable, with its timeline and deliveries", async () => {
    const order = await send('GET', `/v1/marketfront/orders/${theirs.orderId}`, market);
    expect(order.status, order.text).toBe(200);
    expect(order.body).toMatchObject({ storeId: store.storeId, status: 'pending' });
    const timeline = await send('GET', `/v1/marketfront/orders/${theirs.orderId}/timeline`, market);
    expect(timeline.status, timeline.text).toBe(200);
    expect(await deliveredOrderIds(market)).toContain(theirs.orderId);
  });

  it('answers a retry of its Idempotency-Key with the same order, charged once', async () => {
    const again = await theirs.place();
    expect(again.replayed).toBe(true);
    expect(again.order.orderId).toBe(theirs.orderId);
    expect(await chargesOf(theirs.orderId)).toMatchObject([{ status: 'captured' }]);
    await expectChargesMatchOrders();
  });

  it('takes the order off the store side: the former owner neither lists nor moves it', async () => {
    const listed = await send('GET', `/v1/commerce/stores/${store.storeId}/orders`, commerce);
    expect(listed.status).toBe(404);
    const moved = await send('POST', `/v1/commerce/orders/${theirs.orderId}/status`, commerce, {
      status: 'confirmed',
    });
    expect(moved.status, moved.text).toBe(404);
    expect(moved.body.errorCode).toBe('ORDER_NOT_FOUND');
    const advanced = await send('POST', `/v1/test/orders/${theirs.orderId}/advance`, commerce, {
      to: 'completed',
    });
    expect(advanced.status, advanced.text).toBe(404);
  });

  it('shows it to no later owner of the store id', async () => {
    const next = await testPartner('commerce');
    const created = await send('PUT', `/v1/commerce/stores/${store.storeId}`, next, storeProfile());
    expect(created.status, created.text).toBe(201);
    const listed = await send('GET', `/v1/commerce/stores/${store.storeId}/orders`, next);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.orders).toEqual([]);
    const moved = await send('POST', `/v1/commerce/orders/${theirs.orderId}/status`, next, {
      status: 'confirmed',
    });
    expect(moved.status, moved.text).toBe(404);
    nextOwnersStream = await openSse(
      new URL(`/v1/commerce/stores/${store.storeId}/events`, platform.baseUrl),
      { authorization: `Bearer ${next.apiKey}` },
    );
    expect(nextOwnersStream.status, nextOwnersStream.text()).toBe(200);
  });

  it('lets the acceptance sweeper cancel and refund it, counting nothing against the store id', async () => {
    const marketStream = await openSse(new URL('/v1/marketfront/events', platform.baseUrl), {
      authorization: `Bearer ${market.apiKey}`,
    });
    offsetMs += WINDOW_MS + 1_000;
    await platform.ordering.sweepAcceptance();
    const order = await send('GET', `/v1/marketfront/orders/${theirs.orderId}`, market);
    expect(order.body).toMatchObject({ status: 'cancelled', cancelledBy: 'platform' });
    await refundSettled(platform, theirs.orderId);
    expect(await chargesOf(theirs.orderId)).toMatchObject([{ status: 'refunded' }]);
    const runs = await platform.orderingDb
      .selectFrom('store_acceptance_timeouts')
      .selectAll()
      .where('store_id', '=', store.storeId)
      .execute();
    expect(runs).toEqual([]);
    // Its cancel reaches the partner that placed it, and not the store id's next owner.
    const cancelled = (events: { event: string; data: string }[]) =>
      events.filter((e) => e.event === 'order.cancelled' && e.data.includes(theirs.orderId));
    await expect.poll(() => cancelled(marketStream.events).length).toBe(1);
    marketStream.drop();
    expect(cancelled(nextOwnersStream!.events)).toEqual([]);
  });
});

describe('a distribution partner resets with orders at another partner’s store', () => {
  it('deletes its orders and their charges; the store, its own orders and others’ stay', async () => {
    const commerce = await testPartner('commerce');
    const market = await testPartner('distribution');
    const other = await testPartner('distribution');
    const store = await storeWithSodas(commerce.client, host, { orderSubmissionUrl: undefined });
    const mine = await cardOrder(market, store);
    const others = await cardOrder(other, store);
    const own = await send('POST', `/v1/test/stores/${store.storeId}/orders`, commerce, {
      paymentType: 'CARD',
    });
    expect(own.status, own.text).toBe(201);

    const reset = await send('POST', '/v1/test/reset', market);
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body.deleted).toMatchObject({ 'ordering.orders': 1, 'payments.charges': 1 });

    expect((await send('GET', `/v1/marketfront/orders/${mine.orderId}`, market)).status).toBe(404);
    expect(await chargesOf(mine.orderId)).toEqual([]);
    const theirs = await send('GET', `/v1/marketfront/orders/${others.orderId}`, other);
    expect(theirs.status, theirs.text).toBe(200);
    expect((await send('GET', `/v1/commerce/stores/${store.storeId}`, commerce)).status).toBe(200);
    const listed = await send('GET', `/v1/commerce/stores/${store.storeId}/orders`, commerce);
    expect(listed.status, listed.text).toBe(200);
    expect((listed.body.orders as { orderId: string }[]).map((row) => row.orderId).sort()).toEqual(
      [others.orderId, own.body.orderId].sort(),
    );
    await expectChargesMatchOrders();
  });
});

describe('an Idempotency-Key replayed before a reset', () => {
  it('no longer replays the order the reset deleted, in any replica', async () => {
    const commerce = await testPartner('commerce');
    const market = await testPartner('distribution');
    const store = await storeWithSodas(commerce.client, host, { orderSubmissionUrl: undefined });
    const buyer = await newBuyer(market.client, '4242424242424242');
    const text = JSON.stringify(sodaOrder(store.ids, store.storeId, buyer.paymentId));
    const key = randomUUID();
    const place = () =>
      call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
        apiKey: market.apiKey,
        rawBody: text,
        headers: { 'idempotency-key': key, 'x-end-user-id': buyer.endUser },
      });
    const placed = await place();
    expect(placed.status, placed.text).toBe(201);
    for (let i = 0; i < 2; i++) {
      const replay = await place();
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.text).toBe(placed.text);
    }
    const reset = await send('POST', '/v1/test/reset', market);
    expect(reset.body.deleted).toMatchObject({ 'ordering.place_attempts': 1 });
    // The key is new again: its body is placed anew (the card went with the reset).
    const after = await place();
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.text).not.toBe(placed.text);
  });
});

describe("a store's order list", () => {
  it('shows only the caller’s orders at its store id, not one left from an earlier owner', async () => {
    const earlier = await testPartner('commerce');
    const market = await testPartner('distribution');
    const owner = await testPartner('commerce');
    const storeId = randomUUID();
    // Left from a store of this id that `earlier` had (as a reset before this fix left none).
    const leftover = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: earlier,
      placer: market,
    });
    const created = await send('PUT', `/v1/commerce/stores/${storeId}`, owner, storeProfile());
    expect(created.status, created.text).toBe(201);
    const listed = await send('GET', `/v1/commerce/stores/${storeId}/orders`, owner);
    expect(listed.status, listed.text).toBe(200);
    expect((listed.body.orders as { orderId: string }[]).map((row) => row.orderId)).not.toContain(
      leftover,
    );
    const moved = await send('POST', `/v1/commerce/orders/${leftover}/status`, owner, {
      status: 'confirmed',
    });
    expect(moved.status, moved.text).toBe(404);
  });
});
