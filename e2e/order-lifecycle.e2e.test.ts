import {
  createPlatformClient,
  type operations,
  type Order,
  type PlatformClient,
  type ProblemDetail,
} from '@pcp/client';
import { events, order as orderSchema, subjects, type OrderStatus } from '@pcp/contracts';
import { createBusClient, type BusClient, type RequestContext } from '@pcp/service-kit';
import { sql } from 'kysely';
import type { Subscription } from 'nats';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call, type HttpResult } from './http.js';
import { refundSettled } from './orders.js';
import { TOTAL_MINOR } from '@pcp/testing/order-details';
import { seedPlacedOrder, type SeedOrderOptions } from './seed-order.js';

type Partner = { partnerId: string; apiKey: string; client: PlatformClient };
type StatusChange = operations['changeOrderStatus']['requestBody']['content']['application/json'];
type OrderListQuery = NonNullable<operations['listStoreOrders']['parameters']['query']>;
interface OpenApiOperation {
  operationId: string;
  summary?: string;
  description?: string;
  responses: Record<string, unknown>;
}
type Envelope = ReturnType<typeof events.orderStatusChanged.schema.parse>;

const PROCESSOR_TIMEOUT_MS = 1_000;

let env: TestEnvironment;
let platform: TestPlatform;
let bus: BusClient;
/** Owns `storeId` and `listStoreId`. */
let commerce: Partner;
/** Owns `otherStoreId`. */
let otherCommerce: Partner;
/** Places the orders. */
let distribution: Partner;
let otherDistribution: Partner;
let storeId: string;
let listStoreId: string;
let otherStoreId: string;
let statusEvents: Subscription;
/** Every order-status-changed event seen on NATS, by order id. */
const published = new Map<string, Envelope[]>();

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    // A refund the processor does not answer in time is asked again soon.
    paymentsEnv: { PAYMENT_PROCESSOR_TIMEOUT_MS: String(PROCESSOR_TIMEOUT_MS) },
    orderingEnv: { ORDERING_REFUND_RETRY_MS: '100', ORDERING_REFUND_SWEEP_INTERVAL_MS: '200' },
  });
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  statusEvents = env.nc.subscribe(`${env.prefix}.${events.orderStatusChanged.subject}`, {
    callback: (_error, msg) => {
      const envelope = events.orderStatusChanged.schema.parse(msg.json());
      const seen = published.get(envelope.data.orderId) ?? [];
      // At least once: a re-publish of a version is the same event.
      if (!seen.some((event) => event.id === envelope.id)) seen.push(envelope);
      published.set(envelope.data.orderId, seen);
    },
  });
  const withClient = async (created: Promise<{ partnerId: string; apiKey: string }>) => {
    const partner = await created;
    return {
      ...partner,
      client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
    };
  };
  [commerce, otherCommerce, distribution, otherDistribution] = await Promise.all([
    withClient(platform.newPartner('commerce')),
    withClient(platform.newPartner('commerce')),
    withClient(platform.newPartner('distribution')),
    withClient(platform.newPartner('distribution')),
  ]);
  [storeId, listStoreId, otherStoreId] = [randomUUID(), randomUUID(), randomUUID()];
  for (const [id, owner] of [
    [storeId, commerce],
    [listStoreId, commerce],
    [otherStoreId, otherCommerce],
  ] as const) {
    const created = await owner.client.PUT('/v1/commerce/stores/{storeId}', {
      params: { path: { storeId: id } },
      body: storeProfile(),
    });
    expect(created.response.status).toBe(201);
  }
});

afterAll(async () => {
  statusEvents?.unsubscribe();
  await platform?.stop();
  await env?.cleanup();
});

/** An order as place leaves it, by default placed by `distribution` at `commerce`'s store. */
const seedOrder = (options: SeedOrderOptions = {}) =>
  seedPlacedOrder(platform.orderingDb, env.prefix, {
    store: storeId,
    storePartner: commerce,
    placer: distribution,
    ...options,
  });

const setStatus = (orderId: string, body: StatusChange, client = commerce.client) =>
  client.POST('/v1/commerce/orders/{orderId}/status', { params: { path: { orderId } }, body });

const getOrder = (orderId: string, client = distribution.client) =>
  client.GET('/v1/marketfront/orders/{orderId}', { params: { path: { orderId } } });

const listOrders = (store: string, query: OrderListQuery = {}, client = commerce.client) =>
  client.GET('/v1/commerce/stores/{storeId}/orders', {
    params: { path: { storeId: store }, query },
  });

/** What the types forbid (a malformed body or query), as raw HTTP with the commerce key. */
const setStatusRaw = (orderId: string, body: unknown) =>
  call(platform.baseUrl, 'POST', `/v1/commerce/orders/${orderId}/status`, {
    apiKey: commerce.apiKey,
    body,
  });
const listOrdersRaw = (store: string, query: string) =>
  call(platform.baseUrl, 'GET', `/v1/commerce/stores/${store}/orders${query}`, {
    apiKey: commerce.apiKey,
  });

/** An answer of the typed client (`{data, error, response}`) or of a raw call. */
type Answer = HttpResult | { data?: unknown; error?: unknown; response: Response };
const statusAndBody = (answer: Answer): { status: number; body: unknown } =>
  'response' in answer
    ? { status: answer.response.status, body: answer.data ?? answer.error }
    : { status: answer.status, body: answer.body };

/** A 200 whose body is an Order by the contract. */
function expectOrder(answer: Answer): Order {
  const { status, body } = statusAndBody(answer);
  expect(status, JSON.stringify(body)).toBe(200);
  expect(orderSchema.safeParse(body).error).toBeUndefined();
  return body as Order;
}

function expectProblem(answer: Answer, status: number, errorCode: string): ProblemDetail {
  const { status: got, body } = statusAndBody(answer);
  expect(got, JSON.stringify(body)).toBe(status);
  expect(body).toMatchObject({ status, errorCode });
  return body as ProblemDetail;
}

async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The order's events as published, once `count` of them arrived, in version order. */
async function publishedEvents(orderId: string, count: number): Promise<Envelope[]> {
  const seen = await waitFor(
    () => published.get(orderId) ?? [],
    (list) => list.length >= count,
  );
  return [...seen].sort((a, b) => a.version - b.version);
}

const outboxRows = (orderId: string) =>
  platform.orderingDb
    .selectFrom('outbox')
    .select(['aggregate_version', 'payload', 'published_at'])
    .where('aggregate_type', '=', 'order')
    .where('aggregate_id', '=', orderId)
    .orderBy('sequence')
    .execute();

/** Walk an order through `path`, checking each answer, its version and the stored order. */
async function walk(orderId: string, path: StatusChange[], fromVersion = 1) {
  let version = fromVersion;
  for (const change of path) {
    const moved = expectOrder(await setStatus(orderId, change));
    version += 1;
    expect(moved.version).toBe(version);
    if (change.status) expect(moved).toMatchObject({ state: 'open', status: change.status });
    else expect(moved).toMatchObject({ state: change.state, status: change.state });
  }
  return version;
}

describe('a store moving its orders', () => {
  it('takes a pickup order from pending to completed, one version and event per step', async () => {
    const orderId = await seedOrder({ mode: 'PICKUP' });
    const path: StatusChange[] = [
      { status: 'confirmed', estimatedReadyAt: '2026-11-27T12:30:00Z' },
      { status: 'preparing' },
      { status: 'ready' },
      { state: 'completed' },
    ];
    expect(await walk(orderId, path)).toBe(5);

    const read = expectOrder(await getOrder(orderId));
    expect(read).toMatchObject({
      orderId,
      storeId,
      state: 'completed',
      status: 'completed',
      version: 5,
      estimatedReadyAt: '2026-11-27T12:30:00.000Z',
      cancelReason: null,
    });

    const sent = await publishedEvents(orderId, 5);
    expect(
      sent.map((event) => [event.version, event.data.event, event.data.previousStatus]),
    ).toEqual([
      [1, 'order.created', null],
      [2, 'order.status_changed', 'pending'],
      [3, 'order.status_changed', 'confirmed'],
      [4, 'order.status_changed', 'preparing'],
      [5, 'order.status_changed', 'ready'],
    ]);
    expect(sent.at(-1)).toMatchObject({
      type: 'ordering.v1.order-status-changed',
      data: {
        orderId,
        storeId,
        partnerId: distribution.partnerId,
        state: 'completed',
        status: 'completed',
      },
    });
    const rows = await waitFor(
      () => outboxRows(orderId),
      (list) => list.every((row) => row.published_at !== null),
    );
    expect(rows.map((row) => Number(row.aggregate_version))).toEqual([1, 2, 3, 4, 5]);
    expect(rows.every((row) => row.published_at !== null)).toBe(true);
  });

  it('takes a delivery order (placed confirmed) through inTransit to completed', async () => {
    const orderId = await seedOrder({ mode: 'DELIVERY_BY_MERCHANT', status: 'confirmed' });
    const path: StatusChange[] = [
      { status: 'preparing' },
      { status: 'ready' },
      { status: 'inTransit' },
      { state: 'completed' },
    ];
    expect(await walk(orderId, path)).toBe(5);
    const sent = await publishedEvents(orderId, 5);
    expect(sent.map((event) => [event.version, event.data.status])).toEqual([
      [1, 'confirmed'],
      [2, 'preparing'],
      [3, 'ready'],
      [4, 'inTransit'],
      [5, 'completed'],
    ]);
  });

  it('repeats the current status as a no-op, unless it brings another estimatedReadyAt', async () => {
    const orderId = await seedOrder({ status: 'confirmed' });
    const first = expectOrder(
      await setStatus(orderId, { status: 'preparing', estimatedReadyAt: '2026-11-27T12:30:00Z' }),
    );
    expect(first.version).toBe(2);

    const same = expectOrder(
      await setStatus(orderId, {
        status: 'preparing',
        estimatedReadyAt: '2026-11-27T12:30:00.000Z',
      }),
    );
    expect(same).toEqual(first);
    expect(expectOrder(await setStatus(orderId, { status: 'preparing' }))).toEqual(first);

    const later = expectOrder(
      await setStatus(orderId, { status: 'preparing', estimatedReadyAt: '2026-11-27T12:50:00Z' }),
    );
    expect(later).toMatchObject({
      version: 3,
      status: 'preparing',
      estimatedReadyAt: '2026-11-27T12:50:00.000Z',
    });
    const sent = await publishedEvents(orderId, 3);
    expect(
      sent.map((event) => [event.version, event.data.status, event.data.previousStatus]),
    ).toEqual([
      [1, 'confirmed', null],
      [2, 'preparing', 'confirmed'],
      [3, 'preparing', 'preparing'],
    ]);
    // Nothing was written for the no-ops.
    expect((await outboxRows(orderId)).map((row) => Number(row.aggregate_version))).toEqual([
      1, 2, 3,
    ]);
  });

  it('serializes concurrent changes of one order: one moves it, the other finds it moved', async () => {
    const orderId = await seedOrder();
    const answers = await Promise.all([
      setStatus(orderId, { status: 'confirmed' }),
      setStatus(orderId, { status: 'confirmed' }),
    ]);
    for (const answer of answers) expect(expectOrder(answer).version).toBe(2);
    expect((await outboxRows(orderId)).map((row) => Number(row.aggregate_version))).toEqual([1, 2]);
  });
});

describe('illegal moves', () => {
  it.each([
    ['skipping a step', 'PICKUP', [], { status: 'preparing' }, 'pending', 'move to preparing'],
    [
      'going back',
      'PICKUP',
      [{ status: 'confirmed' }, { status: 'preparing' }],
      { status: 'confirmed' },
      'preparing',
      'move to confirmed',
    ],
    [
      'a pickup order in transit',
      'PICKUP',
      [{ status: 'confirmed' }, { status: 'preparing' }, { status: 'ready' }],
      { status: 'inTransit' },
      'ready',
      'move to inTransit',
    ],
    [
      'finishing early',
      'PICKUP',
      [{ status: 'confirmed' }],
      { state: 'completed' },
      'confirmed',
      'be completed',
    ],
    [
      'finishing a delivery order before it is in transit',
      'DELIVERY_BY_MERCHANT',
      [{ status: 'confirmed' }, { status: 'preparing' }, { status: 'ready' }],
      { state: 'completed' },
      'ready',
      'be completed',
    ],
    [
      'cancelling an order in transit',
      'DELIVERY_BY_MERCHANT',
      [
        { status: 'confirmed' },
        { status: 'preparing' },
        { status: 'ready' },
        { status: 'inTransit' },
      ],
      { state: 'cancelled', cancelReason: 'Driver lost' },
      'inTransit',
      'be cancelled',
    ],
    [
      'moving a completed order',
      'PICKUP',
      [
        { status: 'confirmed' },
        { status: 'preparing' },
        { status: 'ready' },
        { state: 'completed' },
      ],
      { status: 'ready' },
      'completed',
      'move to ready',
    ],
    [
      'completing a completed order again',
      'PICKUP',
      [
        { status: 'confirmed' },
        { status: 'preparing' },
        { status: 'ready' },
        { state: 'completed' },
      ],
      { state: 'completed' },
      'completed',
      'be completed',
    ],
    [
      'cancelling a completed order',
      'PICKUP',
      [
        { status: 'confirmed' },
        { status: 'preparing' },
        { status: 'ready' },
        { state: 'completed' },
      ],
      { state: 'cancelled', cancelReason: 'Too late' },
      'completed',
      'be cancelled',
    ],
    [
      'moving a cancelled order',
      'PICKUP',
      [{ state: 'cancelled', cancelReason: 'Closed early' }],
      { status: 'confirmed' },
      'cancelled',
      'move to confirmed',
    ],
  ] as const)(
    '%s is 409 ORDER_STATUS_TRANSITION_INVALID naming the status and the move',
    async (_name, mode, path, move, current, named) => {
      const orderId = await seedOrder({ mode });
      const version = await walk(orderId, [...path]);
      const refused = expectProblem(
        await setStatus(orderId, move),
        409,
        'ORDER_STATUS_TRANSITION_INVALID',
      );
      expect(refused).toMatchObject({ errorCategory: 'conflict', retryable: false });
      expect(refused.detail).toContain(`The order is ${current}`);
      expect(refused.detail).toContain(named);
      // Nothing changed and nothing was sent.
      expect(expectOrder(await getOrder(orderId)).version).toBe(version);
      expect(await outboxRows(orderId)).toHaveLength(version);
    },
  );
});

describe('cancelling', () => {
  it('needs a cancelReason of 1..500 characters (400 REQUEST_INVALID at /cancelReason)', async () => {
    const orderId = await seedOrder();
    // Bodies the contract refuses, one of them beyond what the types let through: raw HTTP.
    for (const body of [
      { state: 'cancelled' },
      { state: 'cancelled', cancelReason: '' },
      { state: 'cancelled', cancelReason: '   ' },
      { state: 'cancelled', cancelReason: 'x'.repeat(501) },
      { state: 'cancelled', cancelReason: 42 },
      { status: 'confirmed', cancelReason: 'Only with cancelled' },
    ]) {
      const refused = expectProblem(await setStatusRaw(orderId, body), 400, 'REQUEST_INVALID');
      expect(refused.errors?.map((error) => error.pointer)).toContain('/cancelReason');
    }
    expect(expectOrder(await getOrder(orderId))).toMatchObject({ status: 'pending', version: 1 });

    const cancelled = expectOrder(
      await setStatus(orderId, { state: 'cancelled', cancelReason: 'y'.repeat(500) }),
    );
    expect(cancelled).toMatchObject({
      state: 'cancelled',
      status: 'cancelled',
      version: 2,
      cancelReason: 'y'.repeat(500),
    });
    const sent = await publishedEvents(orderId, 2);
    expect(sent[1]).toMatchObject({
      version: 2,
      data: { event: 'order.cancelled', state: 'cancelled', previousStatus: 'pending' },
    });
  });

  /** A captured card charge of the distribution partner, as place leaves one. */
  async function capturedCharge(endUserId: string) {
    const vaulted = await distribution.client.POST('/v1/marketfront/payments/cards', {
      params: { header: { 'X-End-User-Id': endUserId } },
      body: {
        cardNumber: '4242424242424242',
        expMonth: 12,
        expYear: 2030,
        cvc: '123',
        cardholderName: 'Grace Hopper',
        billingPostalCode: '60601',
      },
    });
    expect(vaulted.response.status).toBeLessThan(300);
    const { paymentId } = vaulted.data!;
    const ctx: RequestContext = {
      requestId: randomUUID(),
      partnerId: distribution.partnerId,
      partnerKind: 'distribution',
      endUserId,
      paymentTypes: ['CARD', 'PAY_AT_STORE'],
    };
    const authorized = await bus.request(
      subjects.payments.authorize,
      { orderId: randomUUID(), paymentId, amount: TOTAL_MINOR, currency: 'USD', mode: 'live' },
      ctx,
    );
    const captured = await bus.request(
      subjects.payments.capture,
      { chargeId: authorized.chargeId },
      ctx,
    );
    expect(captured).toMatchObject({ status: 'captured', capturedAmount: TOTAL_MINOR });
    return { chargeId: captured.chargeId, paymentId };
  }

  const chargeRow = (chargeId: string) =>
    platform.paymentsDb
      .selectFrom('charges')
      .selectAll()
      .where('charge_id', '=', chargeId)
      .executeTakeFirstOrThrow();
  async function orderingMetric(name: string, labels: Record<string, string>) {
    const metrics = await platform.metrics.get('ordering')!.registry.getMetricsAsJSON();
    const values = metrics.find((metric) => metric.name === name)?.values ?? [];
    return values
      .filter((value) =>
        Object.entries(labels).every(([key, label]) => value.labels[key] === label),
      )
      .reduce((sum, value) => sum + value.value, 0);
  }
  const refundRows = (chargeId: string) =>
    platform.paymentsDb
      .selectFrom('refunds')
      .selectAll()
      .where('charge_id', '=', chargeId)
      .execute();

  const orderRefund = (orderId: string) =>
    platform.orderingDb
      .selectFrom('order_refunds')
      .selectAll()
      .where('order_id', '=', orderId)
      .executeTakeFirst();

  it('refunds a card order’s captured total once, however often the cancel is sent', async () => {
    const charge = await capturedCharge('refund-diner');
    const orderId = await seedOrder({ endUserId: 'refund-diner', charge, status: 'confirmed' });
    await walk(orderId, [{ status: 'preparing' }]);
    const processorCharges = platform.processor.charges().length;

    const cancel: StatusChange = { state: 'cancelled', cancelReason: 'Out of buns' };
    const cancelled = expectOrder(await setStatus(orderId, cancel));
    expect(cancelled).toMatchObject({
      state: 'cancelled',
      status: 'cancelled',
      version: 3,
      cancelReason: 'Out of buns',
      payment: { paymentId: charge.paymentId },
    });
    // Sent again (its answer lost, say), it answers as the first did: no new version.
    expect(expectOrder(await setStatus(orderId, cancel))).toEqual(cancelled);
    expect(
      expectOrder(await setStatus(orderId, { state: 'cancelled', cancelReason: 'Other words' })),
    ).toEqual(cancelled);

    expect(await refundSettled(platform, orderId)).toMatchObject({
      idempotency_key: `order-cancel-${orderId}`,
      charge_id: charge.chargeId,
      amount: null,
      tries: 1,
      raised_at: null,
    });
    expect(await chargeRow(charge.chargeId)).toMatchObject({
      status: 'refunded',
      refunded_amount: TOTAL_MINOR,
    });
    const refunds = await refundRows(charge.chargeId);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({
      idempotency_key: `order-cancel-${orderId}`,
      amount: TOTAL_MINOR,
      status: 'succeeded',
    });
    // The processor refunded the charge it captured, once, and charged nothing new.
    const charges = platform.processor.charges();
    expect(charges).toHaveLength(processorCharges);
    expect(charges.filter((entry) => entry.refundedAmount > 0)).toEqual([
      expect.objectContaining({ status: 'refunded', refundedAmount: TOTAL_MINOR }),
    ]);

    const sent = await publishedEvents(orderId, 3);
    expect(sent).toHaveLength(3);
    expect(sent[2]).toMatchObject({
      version: 3,
      data: { event: 'order.cancelled', status: 'cancelled', previousStatus: 'preparing' },
    });
  });

  it('refunds once when two cancels race: both find it cancelled, one version', async () => {
    const charge = await capturedCharge('racing-diner');
    const orderId = await seedOrder({ endUserId: 'racing-diner', charge });
    const cancel: StatusChange = { state: 'cancelled', cancelReason: 'Duplicate order' };
    const answers = await Promise.all([setStatus(orderId, cancel), setStatus(orderId, cancel)]);
    expect(answers.map((answer) => expectOrder(answer).version)).toEqual([2, 2]);
    await refundSettled(platform, orderId);
    expect(await refundRows(charge.chargeId)).toHaveLength(1);
    expect((await chargeRow(charge.chargeId)).refunded_amount).toBe(TOTAL_MINOR);
  });

  it('cancels at once while the processor fails, and refunds once it is back', async () => {
    const charge = await capturedCharge('unlucky-diner');
    const orderId = await seedOrder({ endUserId: 'unlucky-diner', charge });
    const cancel: StatusChange = { state: 'cancelled', cancelReason: 'Kitchen fire' };
    platform.processor.setFaults({ errorRate: 1, operations: ['refund'] });
    try {
      const cancelled = expectOrder(await setStatus(orderId, cancel));
      expect(cancelled).toMatchObject({ state: 'cancelled', status: 'cancelled', version: 2 });
      await platform.ordering.sweepRefunds();
      // Owed, not lost: asked again after a back-off, the processor's failure kept.
      const owed = await waitFor(
        () => orderRefund(orderId),
        (row) => (row?.tries ?? 0) >= 1 && row?.last_error !== null,
      );
      expect(owed).toMatchObject({ state: 'owed', settled_at: null, raised_at: null });
      expect(owed?.last_error).toMatch(/PAYMENT_PROCESSOR_UNAVAILABLE/);
      expect(expectOrder(await getOrder(orderId))).toMatchObject({ status: 'cancelled' });
      // Still failing two minutes after it was owed: raised to operators, once.
      await sql`update order_refunds set created_at = now() - interval '3 minutes'
                 where order_id = ${orderId}`.execute(platform.orderingDb);
      const raised = await waitFor(
        async () => {
          await platform.ordering.sweepRefunds();
          return orderRefund(orderId);
        },
        (row) => row?.raised_at !== null,
      );
      expect(raised).toMatchObject({ state: 'owed', raised_at: expect.any(Date) });
      expect(await orderingMetric('pcp_order_refunds_owed', { state: 'raised' })).toBeGreaterThan(
        0,
      );
    } finally {
      platform.processor.setFaults({ errorRate: 0, operations: [] });
    }
    expect(await refundSettled(platform, orderId)).toMatchObject({ last_error: null });
    expect((await chargeRow(charge.chargeId)).refunded_amount).toBe(TOTAL_MINOR);
    expect(await refundRows(charge.chargeId)).toHaveLength(1);
    expect(expectOrder(await setStatus(orderId, cancel))).toMatchObject({ version: 2 });
    expect(await outboxRows(orderId)).toHaveLength(2);
  });

  it('never leaves an order open with its money refunded: a refund slower than every timeout', async () => {
    // The processor refunds, and answers only after payments stopped waiting: the cancel is
    // answered before any of it, and the order is cancelled whatever the refund does.
    const charge = await capturedCharge('slow-diner');
    const orderId = await seedOrder({ endUserId: 'slow-diner', charge, status: 'confirmed' });
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 2,
      operations: ['refund'],
    });
    try {
      const started = Date.now();
      const cancelled = expectOrder(
        await setStatus(orderId, { state: 'cancelled', cancelReason: 'Closing early' }),
      );
      expect(Date.now() - started).toBeLessThan(PROCESSOR_TIMEOUT_MS);
      expect(cancelled).toMatchObject({ state: 'cancelled', version: 2 });
      // The first try's answer is lost; the processor has refunded all the same.
      await waitFor(
        () => platform.processor.charges().find((entry) => entry.reference === charge.chargeId),
        (entry) => entry?.status === 'refunded',
      );
      expect(expectOrder(await getOrder(orderId))).toMatchObject({ state: 'cancelled' });
    } finally {
      platform.processor.setFaults({ slowRate: 0, slowMs: 0, operations: [] });
    }
    // Asked again under the same key, the refund is the one the processor made.
    await refundSettled(platform, orderId);
    expect(await refundRows(charge.chargeId)).toMatchObject([
      { status: 'succeeded', amount: TOTAL_MINOR },
    ]);
    expect(
      platform.processor.charges().filter((entry) => entry.reference === charge.chargeId),
    ).toMatchObject([{ status: 'refunded', refundedAmount: TOTAL_MINOR }]);
  });

  it('raises a refund the processor refuses once, and asks again with a back-off, not at the sweep’s rate', async () => {
    const charge = await capturedCharge('refused-diner');
    const orderId = await seedOrder({ endUserId: 'refused-diner', charge });
    // The processor refunded it already, unknown to payments (its dashboard, say): the cancel's
    // refund of the rest is refused for good, by the processor's own code.
    const [authorization] = platform.processor
      .charges()
      .filter((entry) => entry.reference === charge.chargeId);
    const dashboard = await fetch(`${platform.processorUrl}/v1/refunds`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_simulator',
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ authorization: authorization!.id, amount: TOTAL_MINOR }),
    });
    expect(dashboard.status).toBe(201);
    const raisedBefore = await orderingMetric('pcp_order_refunds_total', { outcome: 'raised' });

    expectOrder(await setStatus(orderId, { state: 'cancelled', cancelReason: 'Gone' }));
    const raised = await waitFor(
      async () => {
        await platform.ordering.sweepRefunds();
        return orderRefund(orderId);
      },
      (row) => row?.raised_at !== null,
    );
    expect(raised).toMatchObject({ state: 'owed', raised_at: expect.any(Date) });
    expect(raised?.last_error).toBe(
      'PAYMENT_PROCESSOR_REFUSED: The payment processor refused to refund the charge: amount_too_large',
    );
    // Asked again only after its back-off, which doubles: a few sweeps make one or two tries.
    const tries = raised!.tries;
    for (let sweep = 0; sweep < 10; sweep++) await platform.ordering.sweepRefunds();
    const later = await orderRefund(orderId);
    expect(later!.tries - tries).toBeLessThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (let sweep = 0; sweep < 5; sweep++) await platform.ordering.sweepRefunds();
    const again = await orderRefund(orderId);
    expect(again!.tries).toBeGreaterThan(later!.tries);
    // Raised once, whatever the tries since.
    expect(await orderingMetric('pcp_order_refunds_total', { outcome: 'raised' })).toBe(
      raisedBefore + 1,
    );
    expect(again!.raised_at).toEqual(raised!.raised_at);
    expect(await orderingMetric('pcp_order_refunds_owed', { state: 'raised' })).toBeGreaterThan(0);
    expect(expectOrder(await getOrder(orderId))).toMatchObject({ state: 'cancelled' });
  });

  it('refunds nothing for an order paid at the store', async () => {
    const orderId = await seedOrder();
    const before = platform.processor.charges().map((entry) => entry.refundedAmount);
    expectOrder(await setStatus(orderId, { state: 'cancelled', cancelReason: 'No show' }));
    await platform.ordering.sweepRefunds();
    expect(await orderRefund(orderId)).toBeUndefined();
    expect(platform.processor.charges().map((entry) => entry.refundedAmount)).toEqual(before);
  });
});

describe('a store’s order list', () => {
  /** The seeded orders of `listStoreId`, newest first as the list must give them. */
  const seeded: { orderId: string; createdAt: Date; status: OrderStatus }[] = [];

  beforeAll(async () => {
    const base = Date.parse('2026-11-20T12:00:00Z');
    // 23 orders a minute apart, three of them at one instant (the order id breaks the tie),
    // every third one confirmed.
    for (let index = 0; index < 23; index++) {
      const createdAt = new Date(base + Math.min(index, 20) * 60_000);
      const status = index % 3 === 0 ? 'confirmed' : 'pending';
      seeded.push({
        orderId: await seedOrder({ store: listStoreId, createdAt, status }),
        createdAt,
        status,
      });
    }
    seeded.sort(
      (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.orderId < b.orderId ? 1 : -1),
    );
  });

  /** Every page of a listing, following nextCursor. */
  async function allPages(query: OrderListQuery) {
    const pages: { orders: Order[]; nextCursor: string | null }[] = [];
    let cursor: string | null = null;
    do {
      const page = await listOrders(listStoreId, cursor === null ? query : { ...query, cursor });
      expect(page.response.status, JSON.stringify(page.error)).toBe(200);
      pages.push(page.data!);
      cursor = page.data!.nextCursor;
    } while (cursor !== null && pages.length < 50);
    return pages;
  }

  it('lists newest first, 20 by default, with a cursor to the rest', async () => {
    const first = await listOrders(listStoreId);
    expect(first.response.status).toBe(200);
    const { orders, nextCursor } = first.data!;
    expect(orders).toHaveLength(20);
    for (const listed of orders) {
      expect(orderSchema.safeParse(listed).error).toBeUndefined();
    }
    expect(orders.map((listed) => listed.orderId)).toEqual(
      seeded.slice(0, 20).map((entry) => entry.orderId),
    );
    expect(nextCursor).toEqual(expect.any(String));
    const rest = await listOrders(listStoreId, { cursor: nextCursor! });
    expect(rest.data?.orders.map((listed) => listed.orderId)).toEqual(
      seeded.slice(20).map((entry) => entry.orderId),
    );
    expect(rest.data?.nextCursor).toBeNull();
  });

  it('pages by limit through every order exactly once, ties included', async () => {
    const pages = await allPages({ limit: 2 });
    expect(pages).toHaveLength(12);
    expect(pages.map((page) => page.orders.length)).toEqual([...Array(11).fill(2), 1]);
    expect(pages.flatMap((page) => page.orders.map((listed) => listed.orderId))).toEqual(
      seeded.map((entry) => entry.orderId),
    );
  });

  it('filters by status, paging within it', async () => {
    const pages = await allPages({ status: 'confirmed', limit: 3 });
    const confirmed = seeded.filter((entry) => entry.status === 'confirmed');
    expect(confirmed.length).toBeGreaterThan(3);
    expect(pages.flatMap((page) => page.orders.map((listed) => listed.orderId))).toEqual(
      confirmed.map((entry) => entry.orderId),
    );
    expect(
      pages.flatMap((page) => page.orders).every((listed) => listed.status === 'confirmed'),
    ).toBe(true);
    const none = await listOrders(listStoreId, { status: 'inTransit' });
    expect(none.data).toEqual({ orders: [], nextCursor: null });
  });

  it('keeps orders a microsecond apart apart', async () => {
    const store = randomUUID();
    expect(
      (
        await commerce.client.PUT('/v1/commerce/stores/{storeId}', {
          params: { path: { storeId: store } },
          body: storeProfile(),
        })
      ).response.status,
    ).toBe(201);
    const createdAt = new Date('2026-11-21T08:00:00.123Z');
    // The older one has the greater id: a cursor cut to the millisecond would tie the two
    // and let the id drop the older one.
    const [low, high] = [randomUUID(), randomUUID()].sort();
    const older = await seedOrder({ store, createdAt, orderId: high });
    const newer = await seedOrder({ store, createdAt, orderId: low });
    // Place writes milliseconds; a writer keeping microseconds must page as well.
    await sql`update orders set created_at = created_at + interval '1 microsecond' where order_id = ${newer}`.execute(
      platform.orderingDb,
    );
    const first = await listOrders(store, { limit: 1 });
    expect(first.data?.orders.map((listed) => listed.orderId)).toEqual([newer]);
    const second = await listOrders(store, { limit: 1, cursor: first.data!.nextCursor! });
    expect(second.data?.orders.map((listed) => listed.orderId)).toEqual([older]);
    expect(second.data?.nextCursor).toBeNull();
  });

  it.each([
    ['not base64url', 'not a cursor!'],
    ['base64url of something else', Buffer.from('hello').toString('base64url')],
    [
      'an impossible instant',
      Buffer.from(`2026-02-30T00:00:00.000000Z|${randomUUID()}`).toString('base64url'),
    ],
    [
      'a year Postgres refuses',
      Buffer.from(`0000-01-01T00:00:00.000000Z|${randomUUID()}`).toString('base64url'),
    ],
    [
      'an id that is no uuid',
      Buffer.from('2026-11-20T12:00:00.000000Z|nope').toString('base64url'),
    ],
    ['an empty cursor', ''],
  ])(
    'refuses a malformed cursor (%s) with 400 REQUEST_INVALID at /cursor',
    async (_name, cursor) => {
      const refused = expectProblem(
        await listOrdersRaw(listStoreId, `?cursor=${encodeURIComponent(cursor)}`),
        400,
        'REQUEST_INVALID',
      );
      expect(refused.errors).toEqual([expect.objectContaining({ pointer: '/cursor' })]);
    },
  );

  it.each([
    ['limit=0'],
    ['limit=101'],
    ['limit=abc'],
    ['limit=1.5'],
    ['status=shipped'],
    ['status=completed&status=pending'],
    [`cursor=${'a'.repeat(201)}`],
    ['cursor=%00'],
  ])('refuses ?%s with 400 REQUEST_INVALID', async (query) => {
    expectProblem(await listOrdersRaw(listStoreId, `?${query}`), 400, 'REQUEST_INVALID');
  });

  it('bounds a page at 100', async () => {
    const page = await listOrders(listStoreId, { limit: 100 });
    expect(page.data?.orders).toHaveLength(seeded.length);
    expect(page.data?.nextCursor).toBeNull();
  });
});

describe('who sees what', () => {
  it('a commerce partner lists only its own stores: another’s is 404 STORE_NOT_FOUND', async () => {
    await seedOrder({ store: otherStoreId, storePartner: otherCommerce });
    const foreign = expectProblem(await listOrders(otherStoreId), 404, 'STORE_NOT_FOUND');
    const unknown = expectProblem(await listOrders(randomUUID()), 404, 'STORE_NOT_FOUND');
    expect(foreign.detail).toBe(unknown.detail);
    expect((await listOrders(otherStoreId, {}, otherCommerce.client)).data?.orders).toHaveLength(1);
  });

  it('a commerce partner moves only its stores’ orders: another’s is 404 ORDER_NOT_FOUND', async () => {
    const orderId = await seedOrder({ store: otherStoreId, storePartner: otherCommerce });
    const foreign = expectProblem(
      await setStatus(orderId, { status: 'confirmed' }),
      404,
      'ORDER_NOT_FOUND',
    );
    const unknown = expectProblem(
      await setStatus(randomUUID(), { status: 'confirmed' }),
      404,
      'ORDER_NOT_FOUND',
    );
    expect(foreign.detail).toBe(unknown.detail);
    expect(expectOrder(await getOrder(orderId))).toMatchObject({ status: 'pending', version: 1 });
    expectOrder(await setStatus(orderId, { status: 'confirmed' }, otherCommerce.client));
  });

  it('a distribution partner reads only the orders it placed: another’s is 404 ORDER_NOT_FOUND', async () => {
    const orderId = await seedOrder();
    expectOrder(await getOrder(orderId));
    const foreign = expectProblem(
      await getOrder(orderId, otherDistribution.client),
      404,
      'ORDER_NOT_FOUND',
    );
    const unknown = expectProblem(await getOrder(randomUUID()), 404, 'ORDER_NOT_FOUND');
    expect(foreign.detail).toBe(unknown.detail);
  });

  it('each side’s routes refuse the other kind of partner (403) and a missing key (401)', async () => {
    const orderId = await seedOrder();
    expectProblem(await getOrder(orderId, commerce.client), 403, 'FORBIDDEN');
    expectProblem(await listOrders(storeId, {}, distribution.client), 403, 'FORBIDDEN');
    expectProblem(
      await setStatus(orderId, { status: 'confirmed' }, distribution.client),
      403,
      'FORBIDDEN',
    );
    const anonymous = await call(
      platform.baseUrl,
      'POST',
      `/v1/commerce/orders/${orderId}/status`,
      {
        body: { status: 'confirmed' },
      },
    );
    expectProblem(anonymous, 401, 'UNAUTHORIZED');
    expect(expectOrder(await getOrder(orderId)).version).toBe(1);
  });
});

describe('malformed and hostile input', () => {
  it.each([
    ['GET', '/v1/marketfront/orders/not-a-uuid'],
    ['GET', `/v1/marketfront/orders/${randomUUID()}x`],
    ['GET', '/v1/commerce/stores/not-a-uuid/orders'],
    ['POST', '/v1/commerce/orders/not-a-uuid/status'],
    ['POST', "/v1/commerce/orders/1'%20or%20'1'='1/status"],
  ])('%s %s: a malformed id is 400 REQUEST_INVALID', async (method, path) => {
    const apiKey = path.startsWith('/v1/marketfront') ? distribution.apiKey : commerce.apiKey;
    const result = await call(platform.baseUrl, method, path, {
      apiKey,
      ...(method === 'POST' ? { body: { status: 'confirmed' } } : {}),
    });
    expectProblem(result, 400, 'REQUEST_INVALID');
  });

  it('accepts an upper-case order id as the same order', async () => {
    const orderId = await seedOrder();
    expect(expectOrder(await getOrder(orderId.toUpperCase())).orderId).toBe(orderId);
  });

  it.each([
    ['a wrong type', { status: 5 }, '/status'],
    ['an array for a status', { status: ['confirmed'] }, '/status'],
    ['an unknown status', { status: 'shipped' }, '/status'],
    ['pending, which no store sends', { status: 'pending' }, '/status'],
    ['an unknown state', { state: 'open' }, '/state'],
    ['both a status and a state', { status: 'confirmed', state: 'completed' }, '/state'],
    ['neither', {}, '/status'],
    ['only an estimate', { estimatedReadyAt: '2026-11-27T12:30:00Z' }, '/status'],
    [
      'an estimate that is no instant',
      { status: 'confirmed', estimatedReadyAt: 'soon' },
      '/estimatedReadyAt',
    ],
    [
      'an estimate with an offset',
      { status: 'confirmed', estimatedReadyAt: '2026-11-27T12:30:00+01:00' },
      '/estimatedReadyAt',
    ],
    ['a NUL in the reason', { state: 'cancelled', cancelReason: 'a\u0000b' }, '/cancelReason'],
  ])('a body with %s is 400 REQUEST_INVALID with its pointer', async (_name, body, pointer) => {
    const orderId = await seedOrder();
    const refused = expectProblem(await setStatusRaw(orderId, body), 400, 'REQUEST_INVALID');
    expect(refused.errors?.map((error) => error.pointer)).toContain(pointer);
    expect(expectOrder(await getOrder(orderId)).version).toBe(1);
  });

  it.each([
    ['an array', '[]'],
    ['null', 'null'],
    ['a string', '"confirmed"'],
    ['invalid JSON', '{"status": '],
    ['a prototype-poisoning key', '{"status":"confirmed","__proto__":{"isAdmin":true}}'],
    ['an empty body', ''],
  ])('a body that is %s is 400', async (_name, rawBody) => {
    const orderId = await seedOrder();
    const result = await call(platform.baseUrl, 'POST', `/v1/commerce/orders/${orderId}/status`, {
      apiKey: commerce.apiKey,
      rawBody,
      headers: { 'content-type': 'application/json' },
    });
    expect(result.status, result.text).toBe(400);
    expect(result.body.errorCode).toEqual(expect.any(String));
    expect(expectOrder(await getOrder(orderId)).version).toBe(1);
  });

  it('a body that is not JSON is 415', async () => {
    const orderId = await seedOrder();
    const result = await call(platform.baseUrl, 'POST', `/v1/commerce/orders/${orderId}/status`, {
      apiKey: commerce.apiKey,
      rawBody: 'status=confirmed',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectProblem(result, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('ignores unknown fields: a body cannot set the version, the store or the order', async () => {
    const orderId = await seedOrder();
    // Fields the types do not have: raw HTTP.
    const moved = expectOrder(
      await setStatusRaw(orderId, {
        status: 'confirmed',
        version: 99,
        orderId: randomUUID(),
        storeId: otherStoreId,
        cancelReason: undefined,
        partnerId: otherCommerce.partnerId,
      }),
    );
    expect(moved).toMatchObject({ orderId, storeId, version: 2, status: 'confirmed' });
    expect(moved).not.toHaveProperty('partnerId');
  });

  it('a body over the gateway’s limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const orderId = await seedOrder();
    const result = await setStatus(orderId, {
      state: 'cancelled',
      cancelReason: 'x'.repeat(2 * 1024 * 1024),
    });
    expectProblem(result, 413, 'PAYLOAD_TOO_LARGE');
    expect(expectOrder(await getOrder(orderId)).version).toBe(1);
  });
});

describe('the OpenAPI document', () => {
  it('describes the three routes', async () => {
    const document = (await (await fetch(`${platform.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, OpenApiOperation>>;
    };
    const operations = [
      document.paths['/v1/marketfront/orders/{orderId}']?.get,
      document.paths['/v1/commerce/stores/{storeId}/orders']?.get,
      document.paths['/v1/commerce/orders/{orderId}/status']?.post,
    ].map((operation) => operation!);
    expect(operations.map((operation) => operation.operationId)).toEqual([
      'getOrder',
      'listStoreOrders',
      'changeOrderStatus',
    ]);
    for (const operation of operations) {
      expect(operation.summary).toEqual(expect.any(String));
      expect(operation.description).toEqual(expect.any(String));
    }
    expect(Object.keys(operations[2]!.responses)).toEqual(expect.arrayContaining(['200', '409']));
  });
});
