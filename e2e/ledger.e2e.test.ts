import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { subjects } from '@pcp/contracts';
import { createBusClient, type BusClient, type RequestContext } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { runAdminProcess } from '@pcp/testing/service-process';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, refundSettled, sodaOrder, storeWithSodas } from './orders.js';
import { startSubmissionHost, type SubmissionHost } from './submission-host.js';

/**
 * The ledger's reconciler on the whole platform: every charge ends explained (captured for
 * one live order, refunded, voided, declined, not authorized, in flight) or released, and
 * what it cannot decide is reported and counted.
 */

const PROCESSOR_TIMEOUT_MS = 1_000;

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let submissions: SubmissionHost;
let commerce: PlatformClient;
let distribution: { apiKey: string; partnerId: string };
let market: PlatformClient;
let bus: BusClient;
let storeId: string;
let submittingStoreId: string;
const ids = new Map<string, ReturnType<typeof cartTestCatalog>['ids']>();

async function createStore(orderSubmissionUrl?: string): Promise<string> {
  const store = await storeWithSodas(commerce, host, { orderSubmissionUrl });
  ids.set(store.storeId, store.ids);
  return store.storeId;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000' },
    paymentsEnv: {
      PAYMENT_PROCESSOR_TIMEOUT_MS: String(PROCESSOR_TIMEOUT_MS),
      PAYMENT_BREAKER_VOLUME_THRESHOLD: '10000',
      // Runs when a test asks, and judges what the test just did.
      PAYMENTS_RECONCILE_INTERVAL_MS: '0',
      PAYMENTS_RECONCILE_QUIET_MS: '0',
    },
    orderingEnv: {
      ORDERING_REFUND_RETRY_MS: '100',
      ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
      ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.1/32',
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
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  storeId = await createStore();
  submittingStoreId = await createStore(submissions.url);
});

afterEach(() => {
  platform.processor.setFaults({ slowRate: 0, slowMs: 0, operations: [] });
  submissions.answer = { status: 200 };
});

afterAll(async () => {
  await submissions?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

/** What ordering would send payments for this end user. */
const asOrdering = (endUserId: string): RequestContext => ({
  requestId: randomUUID(),
  partnerId: distribution.partnerId,
  partnerKind: 'distribution',
  endUserId,
  paymentTypes: ['CARD'],
});

/** A charge made straight through payments for an order id ordering never heard of. */
async function orphanCharge(capture: boolean) {
  const { endUser, paymentId } = await newBuyer(market, '4242424242424242');
  const charge = await bus.request(
    subjects.payments.authorize,
    { orderId: randomUUID(), paymentId, amount: 1_234, currency: 'USD', mode: 'live' },
    asOrdering(endUser),
  );
  if (capture) {
    await bus.request(
      subjects.payments.capture,
      { chargeId: charge.chargeId },
      asOrdering(endUser),
    );
  }
  return { ...charge, endUser };
}

async function placed(store = storeId, key = randomUUID()) {
  const { endUser, paymentId } = await newBuyer(market, '4242424242424242');
  const answer = await call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
    apiKey: distribution.apiKey,
    body: sodaOrder(ids.get(store)!, store, paymentId),
    headers: { 'idempotency-key': key, 'x-end-user-id': endUser },
  });
  return { answer, endUser, key };
}

const chargeRow = (chargeId: string) =>
  platform.paymentsDb
    .selectFrom('charges')
    .selectAll()
    .where('charge_id', '=', chargeId)
    .executeTakeFirstOrThrow();
const atProcessor = (chargeId: string) =>
  platform.processor.charges().filter((charge) => charge.reference === chargeId);
const unexplainedGauge = async () => {
  const metrics = await platform.metrics.get('payments')!.registry.getMetricsAsJSON();
  return metrics
    .find((metric) => metric.name === 'pcp_ledger_unresolved_charges')
    ?.values.find((value) => value.labels.class === 'unexplained')?.value;
};

describe('the ledger reconciler', () => {
  it('explains a placed order’s capture once, and does not look at it again until it changes', async () => {
    const { answer } = await placed();
    expect(answer.status).toBe(201);
    const { charge_id: chargeId } = await platform.orderingDb
      .selectFrom('orders')
      .select('charge_id')
      .where('order_id', '=', answer.body.orderId)
      .executeTakeFirstOrThrow();
    const first = await platform.payments.reconcile();
    expect(first.skipped).toBe(false);
    expect(await chargeRow(chargeId!)).toMatchObject({
      ledger_class: 'captured_for_order',
      reconciled_at: expect.any(Date),
    });
    expect(first.unexplained.map((charge) => charge.chargeId)).not.toContain(chargeId);
    const second = await platform.payments.reconcile();
    expect(second.examined).toBeLessThan(first.examined);

    // Cancelled: its refund owed, the charge is in flight until ordering's refund sweeper
    // settles it; refunded, it changed, and it is explained again as refunded.
    platform.processor.setFaults({ errorRate: 1, operations: ['refund'] });
    try {
      await commerce.POST('/v1/commerce/orders/{orderId}/status', {
        params: { path: { orderId: answer.body.orderId } },
        body: { state: 'cancelled', cancelReason: 'closing early' },
      });
      await platform.ordering.sweepRefunds();
      await platform.payments.reconcile();
      expect((await chargeRow(chargeId!)).ledger_class).toBe('in_flight');
      expect(atProcessor(chargeId!)).toMatchObject([{ status: 'captured' }]);
    } finally {
      platform.processor.setFaults({ errorRate: 0, operations: [] });
    }
    await refundSettled(platform, answer.body.orderId);
    await platform.payments.reconcile();
    expect((await chargeRow(chargeId!)).ledger_class).toBe('refunded');
    expect(atProcessor(chargeId!)).toMatchObject([{ status: 'refunded' }]);
  });

  it('releases money held for no order: voids an orphan authorization, refunds an orphan capture', async () => {
    const authorization = await orphanCharge(false);
    const capture = await orphanCharge(true);
    const report = await platform.payments.reconcile();
    expect(report.released).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ chargeId: authorization.chargeId, action: 'voided' }),
        expect.objectContaining({ chargeId: capture.chargeId, action: 'refunded' }),
      ]),
    );
    expect(atProcessor(authorization.chargeId)).toMatchObject([{ status: 'voided' }]);
    expect(atProcessor(capture.chargeId)).toMatchObject([
      { status: 'refunded', refundedAmount: 1_234 },
    ]);
    expect((await chargeRow(capture.chargeId)).ledger_class).toBe('refunded');
  });

  it('leaves alone what an unanswered place attempt may still use', async () => {
    submissions.answer = { status: 503 };
    const { answer, key } = await placed(submittingStoreId);
    expect(answer.status).toBe(503);
    const attempt = await platform.orderingDb
      .selectFrom('place_attempts')
      .select(['order_id', 'charge_id'])
      .where('idempotency_key', '=', key)
      .executeTakeFirstOrThrow();
    await platform.payments.reconcile();
    expect((await chargeRow(attempt.charge_id!)).ledger_class).toBe('in_flight');
    expect(atProcessor(attempt.charge_id!)).toMatchObject([{ status: 'authorized' }]);
  });

  it('records what the processor did when its answer was lost, then judges the charge', async () => {
    const { endUser, paymentId } = await newBuyer(market, '4242424242424242');
    const charge = await bus.request(
      subjects.payments.authorize,
      { orderId: randomUUID(), paymentId, amount: 500, currency: 'USD', mode: 'live' },
      asOrdering(endUser),
    );
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['capture'],
    });
    await expect(
      bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, asOrdering(endUser)),
    ).rejects.toMatchObject({ code: 'PAYMENT_PROCESSOR_UNAVAILABLE' });
    platform.processor.setFaults({ slowRate: 0, operations: [] });
    expect((await chargeRow(charge.chargeId)).status).toBe('authorized');
    const report = await platform.payments.reconcile();
    expect(report.adopted).toBeGreaterThanOrEqual(1);
    // Captured for an order that does not exist: adopted, then refunded.
    expect(await chargeRow(charge.chargeId)).toMatchObject({
      status: 'refunded',
      ledger_class: 'refunded',
    });
    expect(atProcessor(charge.chargeId)).toMatchObject([{ status: 'refunded' }]);
  });

  it('counts a refund whose answer was lost once, whether the reconciler or the retry settles it', async () => {
    const charge = await orphanCharge(true);
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['refund'],
    });
    const refund = () =>
      bus.request(
        subjects.payments.refund,
        { chargeId: charge.chargeId, amount: 1_234, idempotencyKey: 'lost-answer' },
        asOrdering(charge.endUser),
      );
    await expect(refund()).rejects.toMatchObject({ code: 'PAYMENT_PROCESSOR_UNAVAILABLE' });
    platform.processor.setFaults({ slowRate: 0, operations: [] });
    expect((await chargeRow(charge.chargeId)).status).toBe('captured');
    // The processor refunded; the reconciler settles the refund payments asked for.
    await platform.payments.reconcile();
    expect(await chargeRow(charge.chargeId)).toMatchObject({
      status: 'refunded',
      refunded_amount: 1_234,
      ledger_class: 'refunded',
    });
    // The caller's retry of the same refund is that refund, not a second one.
    expect(await refund()).toMatchObject({ status: 'refunded', refundedAmount: 1_234 });
    expect(atProcessor(charge.chargeId)).toMatchObject([
      { status: 'refunded', refundedAmount: 1_234 },
    ]);
  });

  it('adopts a refund whose answer was lost even where a refused refund of the charge is kept', async () => {
    const charge = await orphanCharge(true);
    // What a refund the processor refused leaves (payments-service tests make one): failed,
    // with its code, no longer pending.
    await platform.paymentsDb
      .insertInto('refunds')
      .values({
        refund_id: randomUUID(),
        charge_id: charge.chargeId,
        idempotency_key: 'refused',
        amount: 1_234,
        status: 'failed',
        processor_refund_id: null,
        failure_code: 'amount_too_large',
      })
      .execute();
    platform.processor.setFaults({
      slowRate: 1,
      slowMs: PROCESSOR_TIMEOUT_MS * 3,
      operations: ['refund'],
    });
    try {
      await expect(
        bus.request(
          subjects.payments.refund,
          { chargeId: charge.chargeId, amount: 1_000, idempotencyKey: 'lost' },
          asOrdering(charge.endUser),
        ),
      ).rejects.toMatchObject({ code: 'PAYMENT_PROCESSOR_UNAVAILABLE' });
    } finally {
      platform.processor.setFaults({ slowRate: 0, operations: [] });
    }
    const report = await platform.payments.reconcile();
    expect(report.adopted).toBeGreaterThanOrEqual(1);
    expect(report.unexplained.map((entry) => entry.chargeId)).not.toContain(charge.chargeId);
    const refunds = await platform.paymentsDb
      .selectFrom('refunds')
      .select(['idempotency_key', 'status', 'amount'])
      .where('charge_id', '=', charge.chargeId)
      .orderBy('created_at')
      .execute();
    // The lost answer adopted; then, a capture of no order, the rest released.
    expect(refunds).toEqual([
      { idempotency_key: 'refused', status: 'failed', amount: 1_234 },
      { idempotency_key: 'lost', status: 'succeeded', amount: 1_000 },
      { idempotency_key: `release-${charge.chargeId}`, status: 'succeeded', amount: 234 },
    ]);
    expect(atProcessor(charge.chargeId)).toMatchObject([
      { status: 'refunded', refundedAmount: 1_234 },
    ]);
  });

  it('reports and counts what it cannot decide, at every run until it is resolved', async () => {
    const { answer, endUser } = await placed();
    const { charge_id: chargeId } = await platform.orderingDb
      .selectFrom('orders')
      .select('charge_id')
      .where('order_id', '=', answer.body.orderId)
      .executeTakeFirstOrThrow();
    // Money returned while the order stays open: whether to cancel it is not the ledger's call.
    await bus.request(
      subjects.payments.refund,
      { chargeId: chargeId!, amount: 2_364, idempotencyKey: randomUUID() },
      asOrdering(endUser),
    );
    for (let run = 0; run < 2; run++) {
      const report = await platform.payments.reconcile();
      expect(report.unexplained).toContainEqual(
        expect.objectContaining({ chargeId, reason: "a open order's charge was refunded" }),
      );
      expect(report.classes.unexplained).toBeGreaterThanOrEqual(1);
    }
    expect(await unexplainedGauge()).toBeGreaterThanOrEqual(1);
    expect((await chargeRow(chargeId!)).reconciled_at).toBeNull();
  });

  it('runs on one replica at a time, and takes over a lease its holder left to lapse', async () => {
    const lease = (expiresAt: ReturnType<typeof sql<Date>>) =>
      platform.paymentsDb
        .insertInto('reconciler_lease')
        .values({ name: 'reconciler', holder: 'another replica', expires_at: expiresAt })
        .onConflict((oc) => oc.column('name').doUpdateSet({ expires_at: expiresAt }))
        .execute();
    await lease(sql<Date>`now() + interval '1 minute'`);
    expect(await platform.payments.reconcile()).toMatchObject({ skipped: true, examined: 0 });
    await lease(sql<Date>`now() - interval '1 second'`);
    expect((await platform.payments.reconcile()).skipped).toBe(false);
    // Let go at the end of its run.
    expect(await platform.paymentsDb.selectFrom('reconciler_lease').selectAll().execute()).toEqual(
      [],
    );
  });

  it('refuses malformed or oversized questions on its subjects, answering nothing else', async () => {
    const asPayments = { requestId: randomUUID() };
    await expectAppError(
      bus.request(
        subjects.ordering.chargeOwners,
        { charges: [{ chargeId: 'not-a-uuid', orderId: null }] },
        asPayments,
      ),
      'REQUEST_INVALID',
    );
    await expectAppError(
      bus.request(
        subjects.ordering.chargeOwners,
        {
          charges: Array.from({ length: 501 }, () => ({ chargeId: randomUUID(), orderId: null })),
        },
        asPayments,
      ),
      'REQUEST_INVALID',
    );
    await expectAppError(
      bus.request(subjects.ordering.chargeOwners, { charges: [] }, asPayments),
      'REQUEST_INVALID',
    );
    await expectAppError(
      bus.request(subjects.payments.release, { orderId: 'x' }, asOrdering('someone')),
      'REQUEST_INVALID',
    );
    // Release is the placing partner's: without one it is refused.
    await expectAppError(
      bus.request(subjects.payments.release, { orderId: randomUUID() }, asPayments),
      'FORBIDDEN',
    );
  });

  it('runs by hand as an operator does, printing its report (npm run admin -- reconcile)', async () => {
    const orphan = await orphanCharge(false);
    const run = await runAdminProcess('payments', env, ['reconcile'], {
      PAYMENT_PROCESSOR_URL: platform.processorUrl,
      SANDBOX_PROCESSOR_URL: platform.processorUrl,
      PAYMENTS_RECONCILE_QUIET_MS: '0',
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.result).toMatchObject({
      skipped: false,
      examined: expect.any(Number),
      classes: { voided: expect.any(Number), unexplained: expect.any(Number) },
    });
    expect(run.result.released).toContainEqual(
      expect.objectContaining({ chargeId: orphan.chargeId, action: 'voided' }),
    );
    expect(atProcessor(orphan.chargeId)).toMatchObject([{ status: 'voided' }]);
    const unknown = await runAdminProcess('payments', env, ['reconcile', '--limit', '3']);
    expect(unknown.code).toBe(2);
  });
});
