import { createPlatformClient, placeOrder, type PlatformClient } from '@pcp/client';
import { events, order as orderSchema, type Order, type OrderStatusChange } from '@pcp/contracts';
import { createDatabase, loadConfig } from '@pcp/service-kit';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '@pcp/ordering';
import type { Kysely } from 'kysely';
import type { Subscription } from 'nats';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { createStore } from './ingest.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';
import { seedPlacedOrder } from './seed-order.js';
import { storeProfile } from '@pcp/testing/fixtures';
import { startSubmissionHost, type SubmissionHost } from './submission-host.js';

type Envelope = ReturnType<typeof events.orderStatusChanged.schema.parse>;
type Partner = { partnerId: string; apiKey: string; client: PlatformClient };

/** The window a store gets when its profile sets none (docs/guide/orders.md#acceptance-window). */
const WINDOW_MS = 600_000;

// Stores, ordering (every replica) and the tests read this clock; tests move it past deadlines.
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: Partner;
let distribution: Partner;
let store: Awaited<ReturnType<typeof storeWithSodas>>;
/** A store whose order-submission URL takes every order (they start confirmed). */
let submittingStore: Awaited<ReturnType<typeof storeWithSodas>>;
let submissions: SubmissionHost;
let statusEvents: Subscription;
const published = new Map<string, Envelope[]>();

/** Extra ordering replicas a test started (stopped after it). */
const replicas: { stop(): Promise<void> }[] = [];
let replicaDb: Kysely<OrderingDatabase>;

/** Another ordering replica on the same database, subjects and clock. */
async function startReplica(sweepIntervalMs = 60_000) {
  const replica = createOrderingService({
    ...platform.serviceDeps('ordering'),
    db: replicaDb,
    config: loadConfig(orderingEnvSchema, {
      ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: String(sweepIntervalMs),
    }),
    clock,
  });
  await replica.start();
  replicas.push({ stop: () => replica.stop(5_000) });
  return replica;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    clock,
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    // The tests sweep when they mean to; the timer is tested with a replica of its own.
    orderingEnv: {
      ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '60000',
      ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
      ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.1/32',
    },
  });
  replicaDb = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-ordering-replica',
  });
  host = await startCatalogHost();
  const withClient = async (created: Promise<{ partnerId: string; apiKey: string }>) => {
    const partner = await created;
    return {
      ...partner,
      client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
    };
  };
  commerce = await withClient(platform.newPartner('commerce'));
  distribution = await withClient(
    platform.newPartner('distribution', { paymentTypes: ['CARD', 'PAY_AT_STORE'] }),
  );
  store = await storeWithSodas(commerce.client, host, { orderSubmissionUrl: undefined });
  submissions = await startSubmissionHost();
  submittingStore = await storeWithSodas(commerce.client, host, {
    orderSubmissionUrl: submissions.url,
  });
  statusEvents = env.nc.subscribe(`${env.prefix}.${events.orderStatusChanged.subject}`, {
    callback: (_error, msg) => {
      const envelope = events.orderStatusChanged.schema.parse(msg.json());
      const seen = published.get(envelope.data.orderId) ?? [];
      if (!seen.some((event) => event.id === envelope.id)) seen.push(envelope);
      published.set(envelope.data.orderId, seen);
    },
  });
});

afterAll(async () => {
  statusEvents?.unsubscribe();
  for (const replica of replicas) await replica.stop();
  await submissions?.close();
  await host?.close();
  await platform?.stop();
  await replicaDb?.destroy();
  await env?.cleanup();
});

/** An order placed through the gateway at the sodas store (or `at`), paid by card: pending. */
async function placePendingOrder(at = store): Promise<Order> {
  const order = await placeCardOrder(at);
  expect(order.status).toBe('pending');
  return order;
}

/** The store's status as its partner reads it. */
const storeStatusOf = async (storeId: string) =>
  (
    await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}/status`, {
      apiKey: commerce.apiKey,
    })
  ).body;

/** The store's item availability overrides, as its partner reads them. */
const itemAvailabilityOf = async (storeId: string) =>
  (
    await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}/item-availability`, {
      apiKey: commerce.apiKey,
    })
  ).body as { items: { itemId: string; until: string }[]; version: number };

/** The store's `store.status_changed` events published so far, in order. */
async function statusEventsOf(storeId: string) {
  const jsm = await env.nc.jetstreamManager();
  const subject = `${env.prefix}.${events.storeChanged.subject}`;
  const stream = await jsm.streams.find(subject);
  const { state } = await jsm.streams.info(stream);
  const found: unknown[] = [];
  for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    if (!message || message.subject !== subject) continue;
    const { data } = events.storeChanged.schema.parse(message.json());
    if (data.storeId === storeId && data.event === 'store.status_changed') found.push(data);
  }
  return found;
}

async function placeCardOrder(at: typeof store): Promise<Order> {
  // Sweeps before may have timed out 3 of its orders in a row, and the platform paused it:
  // its partner resumes it, as a partner would.
  const resumed = await call(platform.baseUrl, 'POST', `/v1/commerce/stores/${at.storeId}/status`, {
    apiKey: commerce.apiKey,
    body: { status: 'online' },
  });
  expect(resumed.status).toBe(200);
  const buyer = await newBuyer(distribution.client, '4242424242424242');
  const placed = await placeOrder(distribution.client, {
    body: sodaOrder(at.ids, at.storeId, buyer.paymentId),
    endUserId: buyer.endUser,
  });
  return orderSchema.parse(placed.order);
}

/** A pending order of `storeId` written as place leaves it, paid at the store, due at `acceptBy`. */
const seedPending = (storeId: string, acceptBy: Date) =>
  seedPlacedOrder(platform.orderingDb, env.prefix, {
    store: storeId,
    storePartner: commerce,
    placer: distribution,
    acceptBy,
  });

/** A status change as the store sends it (raw HTTP: the body may be hostile). */
const setStatus = (orderId: string, body: OrderStatusChange | Record<string, unknown>) =>
  call(platform.baseUrl, 'POST', `/v1/commerce/orders/${orderId}/status`, {
    apiKey: commerce.apiKey,
    body,
  });

const orderRow = (orderId: string) =>
  platform.orderingDb
    .selectFrom('orders')
    .selectAll()
    .where('order_id', '=', orderId)
    .executeTakeFirstOrThrow();

const timeoutRow = (storeId: string) =>
  platform.orderingDb
    .selectFrom('store_acceptance_timeouts')
    .selectAll()
    .where('store_id', '=', storeId)
    .executeTakeFirst();

/** The refunds payments made of the order's charge. */
/** The order's charge and its refunds, once the refund its cancel owes (if any) is settled. */
async function refundsOf(order: Order) {
  await waitFor(
    async () => {
      await platform.ordering.sweepRefunds();
      return platform.orderingDb
        .selectFrom('order_refunds')
        .select('state')
        .where('order_id', '=', order.orderId)
        .executeTakeFirst();
    },
    (refund) => refund === undefined || refund.state === 'settled',
  );
  const charge = await platform.paymentsDb
    .selectFrom('charges')
    .selectAll()
    .where('order_id', '=', order.orderId)
    .executeTakeFirstOrThrow();
  const refunds = await platform.paymentsDb
    .selectFrom('refunds')
    .selectAll()
    .where('charge_id', '=', charge.charge_id)
    .execute();
  return { charge, refunds };
}

async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The order's events once `count` arrived (and a moment for any extra), in version order. */
async function eventsOf(orderId: string, count: number): Promise<Envelope[]> {
  await waitFor(
    () => published.get(orderId) ?? [],
    (list) => list.length >= count,
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  return [...(published.get(orderId) ?? [])].sort((a, b) => a.version - b.version);
}

/** Move every clock past the deadline of an order placed now. */
const passDeadline = () => {
  offsetMs += WINDOW_MS + 1_000;
};

describe('an order placed pending', () => {
  it('has acceptBy (placement + the store’s window) and an ETA (placement + pickup etaMinutes)', async () => {
    const order = await placePendingOrder();
    const placedAt = Date.parse(order.createdAt);
    expect(Date.parse(order.acceptBy!)).toBe(placedAt + WINDOW_MS);
    // The store fixture's pickup etaMinutes is 15.
    expect(Date.parse(order.estimatedReadyAt!)).toBe(placedAt + 15 * 60_000);
    expect(order).toMatchObject({ cancelReason: null, cancelledBy: null });
    const [created] = await eventsOf(order.orderId, 1);
    expect(created!.data).toMatchObject({
      event: 'order.created',
      estimatedReadyAt: order.estimatedReadyAt,
      cancelReason: null,
      cancelledBy: null,
    });

    // A confirm in time keeps the order and ends its deadline.
    const confirmed = await setStatus(order.orderId, { status: 'confirmed' });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ status: 'confirmed', acceptBy: null, version: 2 });
    passDeadline();
    await platform.ordering.sweepAcceptance();
    expect(await orderRow(order.orderId)).toMatchObject({ status: 'confirmed', version: 2 });
  });

  it('starts confirmed, with no deadline, when the store’s URL took it', async () => {
    const order = await placeCardOrder(submittingStore);
    expect(order).toMatchObject({ status: 'confirmed', acceptBy: null });
    expect(Date.parse(order.estimatedReadyAt!)).toBe(Date.parse(order.createdAt) + 15 * 60_000);
    passDeadline();
    await platform.ordering.sweepAcceptance();
    expect(await orderRow(order.orderId)).toMatchObject({ status: 'confirmed', version: 1 });
  });

  it('scheduled, has the scheduled time as its estimate', async () => {
    const buyer = await newBuyer(distribution.client, '4242424242424242');
    const scheduledTime = new Date(clock().getTime() + 3 * 3_600_000);
    scheduledTime.setUTCSeconds(0, 0);
    const placed = await placeOrder(distribution.client, {
      body: sodaOrder(store.ids, store.storeId, buyer.paymentId, {
        fulfillment: {
          mode: 'PICKUP',
          scheduleType: 'SCHEDULED',
          scheduledTime: scheduledTime.toISOString(),
        },
      }),
      endUserId: buyer.endUser,
    });
    expect(Date.parse(placed.order.estimatedReadyAt!)).toBe(scheduledTime.getTime());
    expect((await setStatus(placed.order.orderId, { status: 'confirmed' })).status).toBe(200);
  });
});

describe('the acceptance sweeper', () => {
  it('with two ordering replicas cancels once: one refund at the processor, one order.cancelled', async () => {
    const replica = await startReplica();
    const order = await placePendingOrder();
    const refundedBefore = platform.processor.charges().filter((c) => c.refundedAmount > 0).length;
    passDeadline();
    // Both replicas sweep at once, several times over.
    await Promise.all(
      Array.from({ length: 3 }, () => [
        platform.ordering.sweepAcceptance(),
        replica.sweepAcceptance(),
      ]).flat(),
    );

    const read = await distribution.client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId: order.orderId } },
    });
    expect(read.data).toMatchObject({
      state: 'cancelled',
      status: 'cancelled',
      version: 2,
      cancelReason: 'not accepted in time',
      cancelledBy: 'platform',
      // The deadline that passed stays on the order.
      acceptBy: order.acceptBy,
    });
    const { charge, refunds } = await refundsOf(order);
    expect(charge).toMatchObject({ status: 'refunded', refunded_amount: 2_364 });
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ idempotency_key: `order-cancel-${order.orderId}` });
    const refunded = platform.processor.charges().filter((c) => c.refundedAmount > 0);
    expect(refunded).toHaveLength(refundedBefore + 1);

    const sent = await eventsOf(order.orderId, 2);
    expect(sent.map((event) => event.data.event)).toEqual(['order.created', 'order.cancelled']);
    expect(sent[1]!.data).toMatchObject({
      previousStatus: 'pending',
      cancelReason: 'not accepted in time',
      cancelledBy: 'platform',
      estimatedReadyAt: order.estimatedReadyAt,
    });
  });

  it('a replica started after the deadline passed cancels the order on its own timer', async () => {
    const order = await placePendingOrder();
    // Nothing running held a timer for it: the deadline is in the database.
    passDeadline();
    await startReplica(100);
    const row = await waitFor(
      () => orderRow(order.orderId),
      (current) => current.status === 'cancelled',
    );
    expect(row).toMatchObject({ status: 'cancelled', cancelled_by: 'platform', version: 2 });
    expect((await refundsOf(order)).refunds).toHaveLength(1);
    await replicas.pop()!.stop();
  });

  it('cancels an order past its window while the processor fails, and refunds it once it is back', async () => {
    const order = await placePendingOrder();
    passDeadline();
    platform.processor.setFaults({ errorRate: 1, operations: ['refund'] });
    try {
      await platform.ordering.sweepAcceptance();
      // The cancel does not wait on payments: the order is cancelled, its refund owed.
      expect(await orderRow(order.orderId)).toMatchObject({ status: 'cancelled', version: 2 });
      await platform.ordering.sweepRefunds();
      const owed = await waitFor(
        () =>
          platform.orderingDb
            .selectFrom('order_refunds')
            .selectAll()
            .where('order_id', '=', order.orderId)
            .executeTakeFirstOrThrow(),
        (row) => row.last_error !== null,
      );
      expect(owed).toMatchObject({ state: 'owed', tries: 1 });
      expect(owed.last_error).toMatch(/PAYMENT_PROCESSOR_UNAVAILABLE/);
    } finally {
      platform.processor.setFaults({ errorRate: 0, operations: [] });
    }
    await platform.ordering.sweepAcceptance();
    expect(await orderRow(order.orderId)).toMatchObject({ status: 'cancelled', version: 2 });
    expect((await refundsOf(order)).refunds.filter((r) => r.status === 'succeeded')).toHaveLength(
      1,
    );
  });
});

describe('a move of a pending order after its deadline', () => {
  it('is 409 and cancels the order as the platform (refunded once; the sweep finds nothing)', async () => {
    const order = await placePendingOrder();
    passDeadline();
    const late = await setStatus(order.orderId, { status: 'confirmed' });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ errorCode: 'ORDER_STATUS_TRANSITION_INVALID' });
    expect(await orderRow(order.orderId)).toMatchObject({
      status: 'cancelled',
      cancelled_by: 'platform',
      version: 2,
    });
    // A store's own cancel after the deadline is refused too.
    const cancel = await setStatus(order.orderId, { state: 'cancelled', cancelReason: 'Closed' });
    expect(cancel.status).toBe(409);
    await platform.ordering.sweepAcceptance();
    expect(await orderRow(order.orderId)).toMatchObject({ version: 2 });
    expect((await refundsOf(order)).refunds).toHaveLength(1);
  });

  it('races the sweepers 100 times: the confirm or the deadline wins, never both', async () => {
    const replica = await startReplica();
    const raceStore = randomUUID();
    const jitter = () => new Promise((resolve) => setTimeout(resolve, Math.random() * 400));
    const results: { orderId: string; status: number }[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const runs = Array.from({ length: 10 }, async () => {
        // A deadline around when the confirm arrives (it takes some ms through the gateway).
        const orderId = await seedPending(
          raceStore,
          new Date(clock().getTime() + Math.random() * 400),
        );
        const [confirm] = await Promise.all([
          setStatus(orderId, { status: 'confirmed' }),
          jitter().then(() => platform.ordering.sweepAcceptance()),
          jitter().then(() => replica.sweepAcceptance()),
        ]);
        return { orderId, status: confirm.status };
      });
      results.push(...(await Promise.all(runs)));
    }
    // Every confirm was answered: 200 (the order is confirmed) or 409 (the deadline won).
    const outcomes = { confirmed: 0, cancelled: 0 };
    for (const { orderId, status } of results) {
      const row = await orderRow(orderId);
      expect(row.version).toBe(2);
      if (status === 200) {
        expect(row).toMatchObject({ status: 'confirmed', cancelled_by: null, accept_by: null });
        outcomes.confirmed += 1;
      } else {
        expect(status).toBe(409);
        expect(row).toMatchObject({ status: 'cancelled', cancelled_by: 'platform' });
        outcomes.cancelled += 1;
      }
    }
    expect(outcomes.confirmed + outcomes.cancelled).toBe(100);
    console.log('RACE', outcomes);
    // One event per version: created, then the winner's.
    await waitFor(
      () => results.every(({ orderId }) => (published.get(orderId) ?? []).length >= 2),
      Boolean,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const { orderId } of results) expect(published.get(orderId)).toHaveLength(2);
  }, 120_000);
});

describe('3 orders in a row not accepted in time', () => {
  it('pause the store once (pausedBy platform)', async () => {
    const storeId = await createStore(platform.baseUrl, commerce.apiKey);
    const past = new Date(clock().getTime() - 1_000);
    for (let i = 0; i < 3; i++) await seedPending(storeId, past);
    const result = await platform.ordering.sweepAcceptance();
    expect(result.cancelled).toBeGreaterThanOrEqual(3);
    expect(await storeStatusOf(storeId)).toMatchObject({
      status: 'paused',
      reason: 'operational_issues',
      resumeAt: null,
      pausedBy: 'platform',
    });
    expect(await timeoutRow(storeId)).toMatchObject({ consecutive: 0, pause_due_at: null });
    await platform.ordering.sweepAcceptance();
    await waitFor(
      () => statusEventsOf(storeId),
      (found) => found.length === 1,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await statusEventsOf(storeId)).toEqual([
      expect.objectContaining({ status: 'paused', pausedBy: 'platform' }),
    ]);
  });

  it('do not pause a store that confirmed an order between them', async () => {
    const storeId = await createStore(platform.baseUrl, commerce.apiKey);
    const past = new Date(clock().getTime() - 1_000);
    for (let i = 0; i < 2; i++) await seedPending(storeId, past);
    await platform.ordering.sweepAcceptance();
    const kept = await seedPending(storeId, new Date(clock().getTime() + 60_000));
    expect((await setStatus(kept, { status: 'confirmed' })).status).toBe(200);
    for (let i = 0; i < 2; i++) await seedPending(storeId, past);
    await platform.ordering.sweepAcceptance();
    expect(await storeStatusOf(storeId)).toMatchObject({ status: 'online' });
    expect(await timeoutRow(storeId)).toMatchObject({ consecutive: 2, pause_due_at: null });
  });

  it('ask for the pause again, after a back-off, until stores takes it', async () => {
    // Stores cannot pause a store it does not have yet (STORE_NOT_FOUND): the pause stays owed.
    const storeId = randomUUID();
    const past = new Date(clock().getTime() - 1_000);
    for (let i = 0; i < 3; i++) await seedPending(storeId, past);
    await platform.ordering.sweepAcceptance();
    const owed = await timeoutRow(storeId);
    expect(owed).toMatchObject({ pause_tries: 1 });
    expect(owed!.pause_due_at!.getTime()).toBeGreaterThan(clock().getTime());
    // Not yet due: no second try.
    await platform.ordering.sweepAcceptance();
    expect(await timeoutRow(storeId)).toMatchObject({ pause_tries: 1 });

    const created = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
      body: storeProfile(),
    });
    expect(created.status).toBe(201);
    offsetMs += 2_000;
    await platform.ordering.sweepAcceptance();
    expect(await timeoutRow(storeId)).toMatchObject({ pause_due_at: null, pause_tries: 0 });
    expect(await storeStatusOf(storeId)).toMatchObject({ status: 'paused', pausedBy: 'platform' });
  });
});

describe('denying a pending order with unavailableItemIds', () => {
  it('marks the items, then cancels and refunds; an unknown id refuses the whole cancel', async () => {
    const order = await placePendingOrder();
    const known = store.ids.soda;
    // Not an item of the store's active catalog.
    const unknown = randomUUID();
    const refused = await setStatus(order.orderId, {
      state: 'cancelled',
      cancelReason: 'Out of soda',
      unavailableItemIds: [known, unknown],
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      errorCode: 'REQUEST_INVALID',
      errors: [expect.objectContaining({ pointer: '/unavailableItemIds/1' })],
    });
    expect(await orderRow(order.orderId)).toMatchObject({ status: 'pending', version: 1 });
    expect((await refundsOf(order)).refunds).toHaveLength(0);

    const denied = await setStatus(order.orderId, {
      state: 'cancelled',
      cancelReason: 'Out of soda',
      unavailableItemIds: [known],
    });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({
      status: 'cancelled',
      cancelReason: 'Out of soda',
      cancelledBy: 'store',
      acceptBy: null,
    });
    // Soda is unavailable until the end of the store's local day, then the store clears it
    // (the orders of the tests after this one are soda orders).
    const overrides = await itemAvailabilityOf(store.storeId);
    expect(overrides.items).toEqual([
      { itemId: known, available: false, until: expect.any(String) as string },
    ]);
    expect(new Date(overrides.items[0]!.until).getTime()).toBeGreaterThan(clock().getTime());
    const cleared = await call(
      platform.baseUrl,
      'PUT',
      `/v1/commerce/stores/${store.storeId}/item-availability`,
      { apiKey: commerce.apiKey, body: { items: [{ itemId: known, available: true }] } },
    );
    expect(cleared.status).toBe(200);
    expect((await refundsOf(order)).refunds).toHaveLength(1);
    const sent = await eventsOf(order.orderId, 2);
    expect(sent[1]!.data).toMatchObject({ event: 'order.cancelled', cancelledBy: 'store' });
  });

  it('is 409 on an order that is no longer pending, and asks stores nothing', async () => {
    const orderId = await seedPending(store.storeId, new Date(clock().getTime() + 60_000));
    expect((await setStatus(orderId, { status: 'confirmed' })).status).toBe(200);
    const asked = (await itemAvailabilityOf(store.storeId)).version;
    const late = await setStatus(orderId, {
      state: 'cancelled',
      cancelReason: 'Out of soda',
      unavailableItemIds: [store.ids.soda],
    });
    expect(late.status).toBe(409);
    expect((await itemAvailabilityOf(store.storeId)).version).toBe(asked);
    expect(await orderRow(orderId)).toMatchObject({ status: 'confirmed', version: 2 });
  });

  it('refuses hostile bodies at the edge: 101 ids, ids without a cancel, ids that are not uuids', async () => {
    const orderId = await seedPending(store.storeId, new Date(clock().getTime() + 60_000));
    const cancel = { state: 'cancelled', cancelReason: 'Out' };
    for (const body of [
      { ...cancel, unavailableItemIds: Array.from({ length: 101 }, () => randomUUID()) },
      { ...cancel, unavailableItemIds: [] },
      { ...cancel, unavailableItemIds: ['fries'] },
      { status: 'confirmed', unavailableItemIds: [randomUUID()] },
    ]) {
      const answer = await setStatus(orderId, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body).toMatchObject({ errorCode: 'REQUEST_INVALID' });
    }
    expect(await orderRow(orderId)).toMatchObject({ status: 'pending', version: 1 });
  });
});
