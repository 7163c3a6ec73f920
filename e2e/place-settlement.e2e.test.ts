import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { newBuyer, refundSettled, sodaOrder, storeWithSodas } from './orders.js';
import { startSubmissionHost, type SubmissionHost } from './submission-host.js';

/**
 * Money and orders never part at place's edges (issue: money safety): keys past their
 * retention, answers lost after the processor or the store acted, abandoned attempts, keys
 * that cannot be settled. The sweeper runs when a test calls it (`sweepPlaces`), and a test
 * moves a key's deadline or settlement time instead of waiting.
 */

const PLACE = '/v1/marketfront/orders/place';
const PROCESSOR_TIMEOUT_MS = 1_000;
const SUBMISSION_TIMEOUT_MS = 1_000;

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let submissions: SubmissionHost;
let commerce: PlatformClient;
let distribution: { apiKey: string; partnerId: string };
let market: PlatformClient;
const catalogIds = new Map<string, ReturnType<typeof cartTestCatalog>['ids']>();
/** A store without a submission URL, and one whose URL is the test's host. */
let plainStore: string;
let submittingStore: string;

async function createStore(orderSubmissionUrl: string | undefined): Promise<string> {
  const store = await storeWithSodas(commerce, host, { orderSubmissionUrl });
  catalogIds.set(store.storeId, store.ids);
  return store.storeId;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    paymentsEnv: {
      PAYMENT_PROCESSOR_TIMEOUT_MS: String(PROCESSOR_TIMEOUT_MS),
      // The lost answers here are the test's doing: they must not open the breaker.
      PAYMENT_BREAKER_VOLUME_THRESHOLD: '10000',
      PAYMENTS_RECONCILE_INTERVAL_MS: '0',
    },
    orderingEnv: {
      ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
      ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.1/32',
      ORDERING_SUBMISSION_TIMEOUT_MS: String(SUBMISSION_TIMEOUT_MS),
      ORDERING_PAYMENTS_TIMEOUT_MS: '3000',
      // Sweeps run when a test asks for one.
      ORDERING_PLACE_SWEEP_INTERVAL_MS: '3600000',
    },
  });
  host = await startCatalogHost();
  submissions = await startSubmissionHost();
  commerce = createPlatformClient({
    baseUrl: platform.baseUrl,
    apiKey: (await platform.newPartner('commerce')).apiKey,
  });
  distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
  market = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: distribution.apiKey });
  plainStore = await createStore(undefined);
  submittingStore = await createStore(submissions.url);
});

afterEach(() => {
  platform.processor.setFaults({ slowRate: 0, slowMs: 0, errorRate: 0, operations: [] });
  submissions.next = [];
  submissions.answer = { status: 200 };
});

afterAll(async () => {
  await submissions?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const orderBody = (storeId: string, paymentId: string) =>
  sodaOrder(catalogIds.get(storeId)!, storeId, paymentId);

const place = (body: unknown, key: string, endUser: string): Promise<HttpResult> =>
  call(platform.baseUrl, 'POST', PLACE, {
    apiKey: distribution.apiKey,
    body,
    headers: { 'idempotency-key': key, 'x-end-user-id': endUser },
  });

const buyer = () => newBuyer(market, '4242424242424242');

const attemptOf = (key: string) =>
  platform.orderingDb
    .selectFrom('place_attempts')
    .selectAll()
    .where('idempotency_key', '=', key)
    .executeTakeFirstOrThrow();

/** The payments charge of an order (place attempt), if it has one. */
const chargeOfOrder = (orderId: string) =>
  platform.paymentsDb
    .selectFrom('charges')
    .selectAll()
    .where('order_id', '=', orderId)
    .executeTakeFirst();

/** The simulator's record of a payments charge (its processor key names the charge). */
const atProcessor = (chargeId: string) =>
  platform.processor.charges().filter((charge) => charge.reference === chargeId);

const orderRow = (orderId: string) =>
  platform.orderingDb
    .selectFrom('orders')
    .selectAll()
    .where('order_id', '=', orderId)
    .executeTakeFirst();

/** As if the partner had given up on the key a while ago: the sweeper may finish it now. */
const abandon = (key: string) =>
  platform.orderingDb
    .updateTable('place_attempts')
    .set({ settle_at: sql<Date>`now() - interval '1 second'` })
    .where('idempotency_key', '=', key)
    .execute();

/** As if the key had been first used (unanswered) or answered more than its retention ago. */
const pastDeadline = (key: string) =>
  platform.orderingDb
    .updateTable('place_attempts')
    .set({ expires_at: sql<Date>`now() - interval '1 second'` })
    .where('idempotency_key', '=', key)
    .execute();

describe('a key reused after its retention', () => {
  it('places a new order on a new charge; cancelling it refunds only its own', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    const first = await place(body, key, endUser);
    expect(first.status).toBe(201);
    const firstCharge = (await chargeOfOrder(first.body.orderId))!;
    expect(firstCharge.status).toBe('captured');

    await pastDeadline(key);
    await platform.ordering.sweepPlaces();
    const before = platform.processor.charges().length;
    const second = await place(body, key, endUser);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.orderId).not.toBe(first.body.orderId);
    // A charge of its own, captured at the processor: never the first order's again.
    const secondCharge = (await chargeOfOrder(second.body.orderId))!;
    expect(secondCharge.charge_id).not.toBe(firstCharge.charge_id);
    expect(platform.processor.charges().slice(before)).toMatchObject([
      { status: 'captured', capturedAmount: 2364, reference: secondCharge.charge_id },
    ]);
    expect((await orderRow(second.body.orderId))?.charge_id).toBe(secondCharge.charge_id);

    const cancelled = await commerce.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId: second.body.orderId } },
      body: { state: 'cancelled', cancelReason: 'out of soda' },
    });
    expect(cancelled.response.status).toBe(200);
    await refundSettled(platform, second.body.orderId);
    expect(atProcessor(secondCharge.charge_id)).toMatchObject([{ status: 'refunded' }]);
    expect(atProcessor(firstCharge.charge_id)).toMatchObject([{ status: 'captured' }]);
  });

  it('keeps a charge to one order in the database too', async () => {
    const { endUser, paymentId } = await buyer();
    const placed = await place(orderBody(plainStore, paymentId), randomUUID(), endUser);
    const order = (await orderRow(placed.body.orderId))!;
    await expect(
      platform.orderingDb
        .insertInto('orders')
        .values({ ...order, order_id: randomUUID(), details: JSON.stringify(order.details) })
        .execute(),
    ).rejects.toThrow(/orders_charge_key/);
  });
});

describe('retention', () => {
  it('keeps an answer 24 hours from when it was given, not from the key’s first use', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(submittingStore, paymentId);
    const key = randomUUID();
    submissions.next = [{ status: 503 }];
    expect((await place(body, key, endUser)).status).toBe(503);
    // First used almost a day ago: two seconds of its deadline left.
    await platform.orderingDb
      .updateTable('place_attempts')
      .set({ expires_at: sql<Date>`now() + interval '2 seconds'` })
      .where('idempotency_key', '=', key)
      .execute();
    const placed = await place(body, key, endUser);
    expect(placed.status).toBe(201);
    const answered = await attemptOf(key);
    const { now } = await sql<{ now: Date }>`select now()`
      .execute(platform.orderingDb)
      .then((result) => result.rows[0]!);
    expect(answered.expires_at.getTime() - now.getTime()).toBeGreaterThan(23.9 * 3_600_000);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await platform.ordering.sweepPlaces();
    const replay = await place(body, key, endUser);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(placed.text);
  });
});

describe('an answer lost after the other side acted', () => {
  it('a capture the processor made but never answered (a store without a URL) is finished by the sweeper, never voided', async () => {
    const { endUser, paymentId } = await buyer();
    const key = randomUUID();
    const body = orderBody(plainStore, paymentId);
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['capture'],
    });
    const lost = await place(body, key, endUser);
    expect(lost.status).toBe(503);
    expect(lost.body.errorCode).toBe('PAYMENT_PROCESSOR_UNAVAILABLE');
    platform.processor.setFaults({ slowRate: 0, operations: [] });
    const attempt = await attemptOf(key);
    expect(attempt.step).toBe('capturing');
    expect(attempt.settle_at).not.toBeNull();

    // The partner gave up; the sweeper finishes what the processor had done.
    await abandon(key);
    expect((await platform.ordering.sweepPlaces()).settled).toBeGreaterThanOrEqual(1);
    const order = await orderRow(attempt.order_id);
    expect(order).toMatchObject({ state: 'open', status: 'pending' });
    const charge = (await chargeOfOrder(attempt.order_id))!;
    expect(charge.status).toBe('captured');
    expect(atProcessor(charge.charge_id)).toMatchObject([
      { status: 'captured', capturedAmount: 2364 },
    ]);
    // A late retry of the key is the order, replayed.
    const retried = await place(body, key, endUser);
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body.orderId).toBe(attempt.order_id);
  });

  it('an order the store took after the submission timed out is finished by the sweeper: resubmitted (409: it has it), captured, confirmed', async () => {
    const { endUser, paymentId } = await buyer();
    const key = randomUUID();
    submissions.received.length = 0;
    submissions.next = [
      { status: 202, delayMs: SUBMISSION_TIMEOUT_MS * 2 },
      { status: 409, body: { detail: 'We have this order already' } },
    ];
    const lost = await place(orderBody(submittingStore, paymentId), key, endUser);
    expect(lost.status).toBe(503);
    expect(lost.body.errorCode).toBe('SERVICE_UNAVAILABLE');
    const attempt = await attemptOf(key);
    expect(attempt.step).toBe('submitting');

    await abandon(key);
    await platform.ordering.sweepPlaces();
    expect(await orderRow(attempt.order_id)).toMatchObject({ state: 'open', status: 'confirmed' });
    const charge = (await chargeOfOrder(attempt.order_id))!;
    expect(atProcessor(charge.charge_id)).toMatchObject([{ status: 'captured' }]);
    expect(submissions.received.map((request) => request.headers['webhook-id'])).toEqual([
      attempt.order_id,
      attempt.order_id,
    ]);
  });

  it.each([408, 429])(
    'a store answering %i is asked again, not taken as a refusal',
    async (status) => {
      const { endUser, paymentId } = await buyer();
      const key = randomUUID();
      const body = orderBody(submittingStore, paymentId);
      submissions.next = [{ status }];
      const first = await place(body, key, endUser);
      expect(first.status).toBe(503);
      const placed = await place(body, key, endUser);
      expect(placed.status).toBe(201);
      expect(placed.body.status).toBe('confirmed');
      const charge = (await chargeOfOrder(placed.body.orderId))!;
      expect(atProcessor(charge.charge_id)).toMatchObject([{ status: 'captured' }]);
    },
  );
});

describe('an attempt past its deadline', () => {
  it('an authorization payments never recorded is released, and the key answers IDEMPOTENCY_KEY_EXPIRED', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(plainStore, paymentId);
    const key = randomUUID();
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['authorize'],
    });
    const lost = await place(body, key, endUser);
    expect(lost.status).toBe(503);
    platform.processor.setFaults({ slowRate: 0, operations: [] });
    const attempt = await attemptOf(key);
    expect(attempt.step).toBe('validated');
    const unknown = (await chargeOfOrder(attempt.order_id))!;
    expect(unknown.status).toBe('authorizing');
    expect(atProcessor(unknown.charge_id)).toMatchObject([{ status: 'authorized' }]);

    await pastDeadline(key);
    await platform.ordering.sweepPlaces();
    expect(atProcessor(unknown.charge_id)).toMatchObject([{ status: 'voided' }]);
    expect(await orderRow(attempt.order_id)).toBeUndefined();
    const answer = await place(body, key, endUser);
    expect(answer.status).toBe(400);
    expect(answer.headers.get('idempotent-replayed')).toBe('true');
    expect(answer.body).toMatchObject({
      errorCode: 'IDEMPOTENCY_KEY_EXPIRED',
      errorCategory: 'idempotency',
      retryable: false,
    });
  });

  it('a retry of it gets that final answer and is never resumed', async () => {
    const { endUser, paymentId } = await buyer();
    const body = orderBody(submittingStore, paymentId);
    const key = randomUUID();
    submissions.received.length = 0;
    submissions.next = [{ status: 503 }];
    expect((await place(body, key, endUser)).status).toBe(503);
    const attempt = await attemptOf(key);
    await pastDeadline(key);
    const before = platform.processor.charges().length;
    const answer = await place(body, key, endUser);
    expect(answer.status).toBe(400);
    expect(answer.headers.get('idempotent-replayed')).toBeNull();
    expect(answer.body.errorCode).toBe('IDEMPOTENCY_KEY_EXPIRED');
    // Nothing more was sent to the store or the processor; the hold was released.
    expect(submissions.received).toHaveLength(1);
    expect(platform.processor.charges()).toHaveLength(before);
    const charge = (await chargeOfOrder(attempt.order_id))!;
    expect(atProcessor(charge.charge_id)).toMatchObject([{ status: 'voided' }]);
  });

  it('a capture whose answer was lost is refunded, never made a day-late order', async () => {
    const { endUser, paymentId } = await buyer();
    const key = randomUUID();
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['capture'],
    });
    expect((await place(orderBody(plainStore, paymentId), key, endUser)).status).toBe(503);
    platform.processor.setFaults({ slowRate: 0, operations: [] });
    const attempt = await attemptOf(key);
    await pastDeadline(key);
    await platform.ordering.sweepPlaces();
    expect(await orderRow(attempt.order_id)).toBeUndefined();
    const charge = (await chargeOfOrder(attempt.order_id))!;
    expect(atProcessor(charge.charge_id)).toMatchObject([
      { status: 'refunded', capturedAmount: 2364, refundedAmount: 2364 },
    ]);
    expect((await attemptOf(key)).response_body).toContain('IDEMPOTENCY_KEY_EXPIRED');
  });
});

describe('the sweeper', () => {
  it('is not held up by keys it cannot settle: they wait their back-off while others settle', async () => {
    const { endUser, paymentId } = await buyer();
    // A real abandoned attempt: its capture answer was lost.
    const key = randomUUID();
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['capture'],
    });
    expect((await place(orderBody(plainStore, paymentId), key, endUser)).status).toBe(503);
    platform.processor.setFaults({ slowRate: 0, operations: [] });
    await abandon(key);
    // A sweep's worth of keys due before it that can never be settled (a charge payments does
    // not know): with one batch of the oldest stuck keys, the real one would wait for ever.
    const { snapshot } = await attemptOf(key);
    const stuck = Array.from({ length: 100 }, () => randomUUID());
    await platform.orderingDb
      .insertInto('place_attempts')
      .values(
        stuck.map((stuckKey) => ({
          idempotency_key: stuckKey,
          partner_id: distribution.partnerId,
          end_user_id: endUser,
          fingerprint: 'stuck',
          order_id: randomUUID(),
          step: 'capturing' as const,
          snapshot: JSON.stringify(snapshot),
          charge_id: randomUUID(),
          store_rejection: null,
          lease_owner: null,
          lease_expires_at: null,
          response_status: null,
          response_body: null,
          expires_at: sql<Date>`now() + interval '1 day'`,
        })),
      )
      .execute();
    await platform.orderingDb
      .updateTable('place_attempts')
      .set({ settle_at: sql<Date>`now() - interval '1 hour'` })
      .where('idempotency_key', 'in', stuck)
      .execute();
    try {
      await platform.ordering.sweepPlaces();
      await platform.ordering.sweepPlaces();
      const attempt = await attemptOf(key);
      expect(attempt.response_status).toBe(201);
      expect(await orderRow(attempt.order_id)).toBeDefined();
      const waiting = await platform.orderingDb
        .selectFrom('place_attempts')
        .select(['settle_tries'])
        .select(sql<boolean>`settle_at > now()`.as('later'))
        .where('idempotency_key', 'in', stuck)
        .execute();
      expect(waiting.every((row) => row.later && row.settle_tries === 1)).toBe(true);
    } finally {
      await platform.orderingDb
        .deleteFrom('place_attempts')
        .where('idempotency_key', 'in', stuck)
        .execute();
    }
  });
});
