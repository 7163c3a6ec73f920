import { subjects, type ChargeOwners, type VaultCardInput } from '@pcp/contracts';
import {
  createProcessorSimulator,
  testCards,
  type ProcessorSimulator,
} from '@pcp/processor-simulator';
import {
  createBusClient,
  createDatabase,
  createSubjectService,
  handle,
  loadConfig,
  type BusClient,
  type RequestContext,
  type ServiceMetrics,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { expectAppError } from '@pcp/testing/expect-app-error';
import {
  createPaymentsService,
  PAYMENTS_SCHEMA,
  paymentsEnvSchema,
  type PaymentsDatabase,
} from '../../src/app.js';

const TIMEOUT_MS = 400;
const RESET_MS = 600;
const VOLUME = 5;

let env: TestEnvironment;
let db: Kysely<PaymentsDatabase>;
let processor: ProcessorSimulator;
let processorUrl: string;
let service: ReturnType<typeof createPaymentsService>;
let registry: ServiceMetrics['registry'];
const logged = capturingLogger();
const breakerLog = () =>
  logged.lines.filter((line) => line.breaker === 'payment-processor').map((line) => line.state);
let bus: BusClient;
let now = new Date('2026-11-23T10:00:00Z');

const partnerId = randomUUID();
const customer = (endUserId = `user-${randomUUID()}`): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'distribution',
  endUserId,
  paymentTypes: ['CARD', 'PAY_AT_STORE'],
  mode: 'live',
});

const card = (cardNumber: string): VaultCardInput => ({
  cardNumber,
  expMonth: 12,
  expYear: 2030,
  cvc: '123',
  cardholderName: 'Ada Lovelace',
});

async function vault(ctx: RequestContext, cardNumber = '4242424242424242') {
  const { card: vaulted } = await bus.request(subjects.payments.vaultCard, card(cardNumber), ctx);
  return vaulted.paymentId;
}

/** Authorize `amount` for the order `orderId` (a place attempt's; a fresh one by default). */
const authorize = (
  ctx: RequestContext,
  paymentId: string,
  orderId = randomUUID(),
  amount = 2_565,
) =>
  bus.request(
    subjects.payments.authorize,
    { orderId, paymentId, amount, currency: 'USD', mode: 'live' },
    ctx,
  );

/** What the simulator recorded for one of our charges (our processor keys name the charge). */
const chargesOf = (chargeId: string) =>
  processor.charges().filter((charge) => charge.idempotencyKey.includes(chargeId));

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const metrics = await registry.getMetricsAsJSON();
  const values = metrics.find((entry) => entry.name === name)?.values ?? [];
  return values
    .filter((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label))
    .reduce((sum, value) => sum + value.value, 0);
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<PaymentsDatabase>({
    url: env.databaseUrl,
    schema: PAYMENTS_SCHEMA,
    applicationName: 'test-payments',
  });
  processor = createProcessorSimulator();
  const url = await processor.listen();
  processorUrl = url;
  const metrics = env.newMetrics('payments');
  registry = metrics.registry;
  service = createPaymentsService({
    nc: env.nc,
    logger: logged.logger,
    metrics,
    subjectPrefix: env.prefix,
    requestTimeoutMs: 5_000,
    db,
    clock: () => now,
    config: loadConfig(paymentsEnvSchema, {
      PAYMENT_PROCESSOR_URL: url,
      PAYMENT_PROCESSOR_TIMEOUT_MS: String(TIMEOUT_MS),
      PAYMENT_BREAKER_VOLUME_THRESHOLD: String(VOLUME),
      PAYMENT_BREAKER_RESET_MS: String(RESET_MS),
      // The breaker's tests decline one card many times; the velocity tests run their own.
      PAYMENTS_CARD_DECLINES_PER_WINDOW: '1000',
      // The reconciler's tests judge what they just did.
      PAYMENTS_RECONCILE_QUIET_MS: '0',
    }),
  });
  await service.start();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterEach(async () => {
  processor.setFaults({
    latencyMs: 0,
    errorRate: 0,
    hangRate: 0,
    slowRate: 0,
    slowMs: 0,
    operations: [],
  });
  now = new Date('2026-11-23T10:00:00Z');
  // Let a breaker a test opened close again before the next test.
  for (let i = 0; i < 50 && service.breakerState() !== 'closed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, RESET_MS / 4));
    if (service.breakerState() === 'halfOpen') {
      await authorize(customer(), await vault(customer())).catch(() => undefined);
    }
  }
});

afterAll(async () => {
  await service.stop();
  await processor.close();
  await db.destroy();
  await env.cleanup();
});

describe('authorizations', () => {
  it('holds the amount once per order, and asking again answers the same charge', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const orderId = randomUUID();
    const first = await authorize(ctx, paymentId, orderId);
    expect(first).toMatchObject({
      orderId,
      status: 'authorized',
      amount: 2_565,
      currency: 'USD',
      last4: '4242',
    });
    expect(await authorize(ctx, paymentId, orderId)).toEqual(first);
    expect(chargesOf(first.chargeId)).toMatchObject([
      { status: 'authorized', amount: 2_565, reference: first.chargeId },
    ]);
  });

  it('gives an order one charge only: another amount, card, end user or partner is refused', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const orderId = randomUUID();
    await authorize(ctx, paymentId, orderId);
    await expectAppError(authorize(ctx, paymentId, orderId, 100), 'IDEMPOTENCY_KEY_CONFLICT');
    const other = await vault(ctx, '5555555555554444');
    await expectAppError(authorize(ctx, other, orderId), 'IDEMPOTENCY_KEY_CONFLICT');
    const stranger = customer();
    await expectAppError(
      authorize(stranger, await vault(stranger), orderId),
      'IDEMPOTENCY_KEY_CONFLICT',
    );
    // The unique order id holds in the database too, whoever writes.
    const [row] = await db
      .selectFrom('charges')
      .select('charge_id')
      .where('order_id', '=', orderId)
      .execute();
    await expect(
      db
        .insertInto('charges')
        .values({
          charge_id: randomUUID(),
          partner_id: partnerId,
          end_user_id: 'someone',
          payment_id: paymentId,
          order_id: orderId,
          amount: 1,
          currency: 'USD',
          status: 'authorizing',
        })
        .execute(),
    ).rejects.toThrow(/charges_order_key/);
    expect(row).toBeDefined();
  });

  it('answers an order whose authorization was lost from the processor, even once its card is deleted or the partner may no longer take cards', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const orderId = randomUUID();
    // The processor authorizes, but its answer comes after our timeout: payments never knew.
    processor.setFaults({ slowRate: 1, slowMs: TIMEOUT_MS * 2, operations: ['authorize'] });
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    processor.setFaults({ slowRate: 0, operations: [] });
    const [unknown] = await db
      .selectFrom('charges')
      .selectAll()
      .where('order_id', '=', orderId)
      .execute();
    expect(unknown?.status).toBe('authorizing');
    await bus.request(subjects.payments.deleteCard, { paymentId }, ctx);
    const attempts = processor.charges().length;
    // Asked again, payments learns from the processor what it holds: never a token error
    // over money on hold, never a second authorization.
    const learnt = await authorize({ ...ctx, paymentTypes: ['PAY_AT_STORE'] }, paymentId, orderId);
    expect(learnt).toMatchObject({ orderId, status: 'authorized', amount: 2_565 });
    expect(processor.charges()).toHaveLength(attempts);
    expect(chargesOf(learnt.chargeId)).toMatchObject([{ status: 'authorized' }]);
  });

  it('declines, without charging, an order whose lost authorization the processor never made once the card is gone', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const orderId = randomUUID();
    processor.setFaults({ errorRate: 1, operations: ['authorize'] });
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    processor.setFaults({ errorRate: 0, operations: [] });
    await bus.request(subjects.payments.deleteCard, { paymentId }, ctx);
    const before = processor.charges().length;
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_TOKEN_INVALID');
    expect(processor.charges()).toHaveLength(before);
  });

  it('answers PAYMENT_TOKEN_INVALID for another end user’s, another partner’s or a deleted card', async () => {
    const owner = customer();
    const paymentId = await vault(owner);
    await expectAppError(authorize(customer(), paymentId), 'PAYMENT_TOKEN_INVALID');
    await expectAppError(
      authorize({ ...owner, partnerId: randomUUID() }, paymentId),
      'PAYMENT_TOKEN_INVALID',
    );
    await bus.request(subjects.payments.deleteCard, { paymentId }, owner);
    const error = await expectAppError(authorize(owner, paymentId), 'PAYMENT_TOKEN_INVALID');
    expect(error.errors?.[0]?.pointer).toBe('/paymentId');
  });

  it('refuses partners not allowed to take cards, and requests without an end user', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    await expectAppError(
      authorize({ ...ctx, paymentTypes: ['PAY_AT_STORE'] }, paymentId),
      'PAYMENT_TYPE_NOT_ALLOWED',
    );
    await expectAppError(
      authorize({ ...ctx, endUserId: undefined }, paymentId),
      'SESSION_USER_REQUIRED',
    );
  });

  it('declines a card that expired while stored without asking the processor', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const before = processor.charges().length;
    now = new Date('2031-01-02T00:00:00Z');
    const error = await expectAppError(authorize(ctx, paymentId), 'PAYMENT_DECLINED');
    expect(error.errors?.[0]?.code).toBe('CARD_EXPIRED');
    expect(processor.charges()).toHaveLength(before);
  });

  it('replays a final decline for its key, and retries a processing error with a new processor key', async () => {
    const ctx = customer();
    const declined = await vault(ctx, '4000000000009995');
    const orderId = randomUUID();
    await expectAppError(authorize(ctx, declined, orderId), 'PAYMENT_DECLINED');
    const attempts = processor.charges().length;
    const replay = await expectAppError(authorize(ctx, declined, orderId), 'PAYMENT_DECLINED');
    expect(replay.errors?.[0]?.code).toBe('INSUFFICIENT_FUNDS');
    expect(processor.charges()).toHaveLength(attempts);

    const flaky = await vault(ctx, '4000000000000119');
    const flakyOrder = randomUUID();
    await expectAppError(authorize(ctx, flaky, flakyOrder), 'PAYMENT_FAILED');
    await expectAppError(authorize(ctx, flaky, flakyOrder), 'PAYMENT_FAILED');
    // Each try reached the processor under its own key: the key stayed usable.
    expect(processor.charges()).toHaveLength(attempts + 2);
  });
});

describe('card ownership (validate’s check)', () => {
  it('owns a live card of the end user only: not another end user’s, partner’s or a deleted one', async () => {
    const owner = customer();
    const paymentId = await vault(owner);
    const owned = (ctx: RequestContext, id = paymentId) =>
      bus.request(subjects.payments.cardOwned, { paymentId: id }, ctx);
    expect(await owned(owner)).toEqual({ owned: true });
    // A card past its expiry is still the end user's: authorizing it answers CARD_EXPIRED.
    now = new Date('2031-01-01T00:00:00Z');
    expect(await owned(owner)).toEqual({ owned: true });
    expect(await owned(customer())).toEqual({ owned: false });
    expect(await owned({ ...owner, partnerId: randomUUID() })).toEqual({ owned: false });
    expect(await owned(owner, randomUUID())).toEqual({ owned: false });
    await bus.request(subjects.payments.deleteCard, { paymentId }, owner);
    expect(await owned(owner)).toEqual({ owned: false });
    await expectAppError(owned({ ...owner, endUserId: undefined }), 'SESSION_USER_REQUIRED');
  });
});

describe('capture, release and refund', () => {
  it('captures, then refunds in parts up to the captured amount, once per refund key', async () => {
    const ctx = customer();
    const charge = await authorize(ctx, await vault(ctx), randomUUID(), 5_000);
    const captured = await bus.request(
      subjects.payments.capture,
      { chargeId: charge.chargeId, amount: 4_000 },
      ctx,
    );
    expect(captured).toMatchObject({ status: 'captured', capturedAmount: 4_000 });
    const refundKey = randomUUID();
    const refund = (amount: number, idempotencyKey = refundKey) =>
      bus.request(
        subjects.payments.refund,
        { chargeId: charge.chargeId, amount, idempotencyKey },
        ctx,
      );
    expect(await refund(1_500)).toMatchObject({
      status: 'partially_refunded',
      refundedAmount: 1_500,
    });
    expect(await refund(1_500)).toMatchObject({ refundedAmount: 1_500 });
    await expectAppError(refund(3_000, randomUUID()), 'REQUEST_INVALID');
    expect(await refund(2_500, randomUUID())).toMatchObject({
      status: 'refunded',
      refundedAmount: 4_000,
    });
    const atProcessor = processor
      .charges()
      .find((entry) => entry.status === 'refunded' && entry.amount === 5_000);
    expect(atProcessor).toMatchObject({ capturedAmount: 4_000, refundedAmount: 4_000 });
  });

  const release = (ctx: RequestContext, orderId: string) =>
    bus.request(subjects.payments.release, { orderId }, ctx);

  /** A captured charge of `amount` for a fresh order of a fresh end user. */
  async function captured(amount = 4_000) {
    const ctx = customer();
    const charge = await authorize(ctx, await vault(ctx), randomUUID(), amount);
    await bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, ctx);
    const refund = (idempotencyKey: string, refunded?: number) =>
      bus.request(
        subjects.payments.refund,
        {
          chargeId: charge.chargeId,
          idempotencyKey,
          ...(refunded === undefined ? {} : { amount: refunded }),
        },
        ctx,
      );
    return { ctx, charge, refund };
  }
  const refundRows = (chargeId: string) =>
    db.selectFrom('refunds').selectAll().where('charge_id', '=', chargeId).execute();

  it('refunds the rest without an amount: what is left, and nothing (never a refusal) once all is back', async () => {
    const { charge, refund } = await captured();
    expect(await refund('adjustment', 1_000)).toMatchObject({ refundedAmount: 1_000 });
    // A cancel's refund: the rest, 3,000.
    expect(await refund('cancel')).toMatchObject({ status: 'refunded', refundedAmount: 4_000 });
    expect(await refund('cancel')).toMatchObject({ status: 'refunded', refundedAmount: 4_000 });
    // Another key's rest once everything is back (a release after the cancel): success, nothing sent.
    expect(await refund('release')).toMatchObject({ status: 'refunded', refundedAmount: 4_000 });
    expect(
      (await refundRows(charge.chargeId)).map((row) => [row.idempotency_key, row.amount]),
    ).toEqual(
      expect.arrayContaining([
        ['adjustment', 1_000],
        ['cancel', 3_000],
      ]),
    );
    expect(await refundRows(charge.chargeId)).toHaveLength(2);
    expect(chargesOf(charge.chargeId)).toMatchObject([{ refundedAmount: 4_000 }]);
    // A refund of an amount on a charge with nothing left is still refused.
    await expectAppError(refund('late', 1), 'REQUEST_INVALID');
  });

  it('never claims more than was captured when refunds under many keys race', async () => {
    const { charge, refund } = await captured();
    const answers = await Promise.allSettled(
      Array.from({ length: 10 }, (_, index) => refund(`race-${index}`, 1_000)),
    );
    expect(answers.filter((answer) => answer.status === 'fulfilled')).toHaveLength(4);
    for (const answer of answers) {
      if (answer.status === 'rejected') {
        expect(answer.reason).toMatchObject({ code: 'REQUEST_INVALID' });
      }
    }
    expect(chargesOf(charge.chargeId)).toMatchObject([
      { status: 'refunded', refundedAmount: 4_000 },
    ]);
  });

  it('fails a refund the processor refuses with the processor’s own code, and asks again as a new call', async () => {
    const { charge, refund } = await captured();
    const { processor_authorization_id: authorization } = await db
      .selectFrom('charges')
      .select('processor_authorization_id')
      .where('charge_id', '=', charge.chargeId)
      .executeTakeFirstOrThrow();
    // Someone refunded part of it at the processor itself (its dashboard, say).
    const dashboard = await fetch(`${processorUrl}/v1/refunds`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_simulator',
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ authorization, amount: 1_000 }),
    });
    expect(dashboard.status).toBe(201);
    const refused = await expectAppError(refund('cancel'), 'PAYMENT_PROCESSOR_REFUSED');
    expect(refused.message).toBe(
      'The payment processor refused to refund the charge: amount_too_large',
    );
    // Not pending for ever: failed, with the processor's code; the charge is as it was.
    expect(await refundRows(charge.chargeId)).toMatchObject([
      { status: 'failed', failure_code: 'amount_too_large', processor_attempt: 0, amount: 4_000 },
    ]);
    // Asked again, a new call under a new processor key (a refusal moved no money), refused again.
    await expectAppError(refund('cancel'), 'PAYMENT_PROCESSOR_REFUSED');
    expect(await refundRows(charge.chargeId)).toMatchObject([
      { status: 'failed', processor_attempt: 1 },
    ]);
    // A refund the processor can make still goes through: the failed one holds nothing back.
    expect(await refund('partial', 3_000)).toMatchObject({ refundedAmount: 3_000 });
  });

  it('releases an authorization (the store rejected the order): voided once, never captured after', async () => {
    const ctx = customer();
    const orderId = randomUUID();
    const charge = await authorize(ctx, await vault(ctx), orderId);
    expect((await release(ctx, orderId)).charge).toMatchObject({ status: 'voided' });
    expect((await release(ctx, orderId)).charge).toMatchObject({ status: 'voided' });
    expect(chargesOf(charge.chargeId)).toMatchObject([{ status: 'voided' }]);
    await expectAppError(
      bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, ctx),
      'CHARGE_STATE_INVALID',
    );
    await expectAppError(
      bus.request(
        subjects.payments.capture,
        { chargeId: charge.chargeId },
        { ...ctx, partnerId: randomUUID() },
      ),
      'CHARGE_NOT_FOUND',
    );
  });

  it('releases a capture by refunding it in full, once', async () => {
    const ctx = customer();
    const orderId = randomUUID();
    const charge = await authorize(ctx, await vault(ctx), orderId);
    await bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, ctx);
    expect((await release(ctx, orderId)).charge).toMatchObject({
      status: 'refunded',
      refundedAmount: 2_565,
    });
    expect((await release(ctx, orderId)).charge).toMatchObject({ status: 'refunded' });
    expect(chargesOf(charge.chargeId)).toMatchObject([
      { status: 'refunded', capturedAmount: 2_565, refundedAmount: 2_565 },
    ]);
  });

  it('refunds a capture whose relaxed record a database crash lost: learnt from the processor first', async () => {
    const ctx = customer();
    const charge = await authorize(ctx, await vault(ctx), randomUUID());
    await bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, ctx);
    // The `captured` update commits without waiting for the WAL flush: a crash reverts it.
    await db
      .updateTable('charges')
      .set({ status: 'authorized', captured_amount: 0 })
      .where('charge_id', '=', charge.chargeId)
      .execute();
    const refunded = await bus.request(
      subjects.payments.refund,
      { chargeId: charge.chargeId, amount: 565, idempotencyKey: randomUUID() },
      ctx,
    );
    expect(refunded).toMatchObject({
      status: 'partially_refunded',
      capturedAmount: 2_565,
      refundedAmount: 565,
    });
    expect(chargesOf(charge.chargeId)).toMatchObject([
      { status: 'partially_refunded', capturedAmount: 2_565, refundedAmount: 565 },
    ]);
  });

  it('releases an authorization whose answer was lost: learnt from the processor, then voided', async () => {
    const ctx = customer();
    const orderId = randomUUID();
    const paymentId = await vault(ctx);
    processor.setFaults({ slowRate: 1, slowMs: TIMEOUT_MS * 2, operations: ['authorize'] });
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    processor.setFaults({ slowRate: 0, operations: [] });
    const { charge } = await release(ctx, orderId);
    expect(charge).toMatchObject({ orderId, status: 'voided' });
    expect(chargesOf(charge!.chargeId)).toMatchObject([{ status: 'voided' }]);
  });

  it('answers null for an order without a charge, or another partner’s', async () => {
    const ctx = customer();
    const orderId = randomUUID();
    expect(await release(ctx, orderId)).toEqual({ charge: null });
    await authorize(ctx, await vault(ctx), orderId);
    expect(await release({ ...ctx, partnerId: randomUUID() }, orderId)).toEqual({ charge: null });
    expect((await release(ctx, orderId)).charge?.status).toBe('voided');
  });
});

/**
 * Fail calls until the breaker opens: its window also holds the successful calls of earlier
 * tests, so how many failures that takes varies; each must be a 503.
 */
async function failUntilOpen(ctx: RequestContext, paymentId: string, batch: number) {
  for (let round = 0; round < 20 && service.breakerState() !== 'open'; round++) {
    await Promise.all(
      Array.from({ length: batch }, () =>
        expectAppError(authorize(ctx, paymentId), 'PAYMENT_PROCESSOR_UNAVAILABLE'),
      ),
    );
  }
  expect(service.breakerState()).toBe('open');
}

const waitForHalfOpen = async () => {
  for (let i = 0; i < 40 && service.breakerState() !== 'halfOpen'; i++) {
    await new Promise((resolve) => setTimeout(resolve, RESET_MS / 8));
  }
  expect(service.breakerState()).toBe('halfOpen');
};

describe('the reconciler’s releases', () => {
  /** Ordering as the reconciler meets it: owners answered from `answers`, one per question. */
  let answers: ChargeOwners['owners'][number][][] = [];
  let asked = 0;
  let ordering: ReturnType<typeof createSubjectService>;

  beforeAll(async () => {
    ordering = createSubjectService(
      { nc: env.nc, logger: env.logger, subjectPrefix: env.prefix, requestTimeoutMs: 5_000 },
      { name: 'ordering', version: '0.0.0' },
      [
        handle(subjects.ordering.chargeOwners, ({ charges }) => {
          const scripted = answers[Math.min(asked, answers.length - 1)] ?? [];
          asked += 1;
          return Promise.resolve({
            owners: charges.map(
              (charge) =>
                scripted.find((owner) => owner.chargeId === charge.chargeId) ?? {
                  chargeId: charge.chargeId,
                  orders: [],
                  attempt: null,
                },
            ),
          });
        }),
      ],
    );
    await ordering.start();
  });

  afterAll(() => ordering.stop());

  const owner = (chargeId: string, orderId: string, placed: boolean) => ({
    chargeId,
    orders: placed
      ? [
          {
            orderId,
            state: 'open' as const,
            totalMinor: 2_565,
            currency: 'USD',
            refund: 'none' as const,
            refundOwedSince: null,
          },
        ]
      : [],
    attempt: {
      orderId,
      step: 'recorded',
      answered: true,
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    },
  });

  it('withholds a release when the owners read again name a live order, and keeps and logs it', async () => {
    // The reconciler judges by the clock: now, after the charges it judges were made.
    now = new Date(Date.now() + 60_000);
    const ctx = customer();
    const orderId = randomUUID();
    const charge = await authorize(ctx, await vault(ctx), orderId);
    await bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, ctx);
    // The batch's read says nobody holds it; the read just before releasing finds the order.
    answers = [[owner(charge.chargeId, orderId, false)], [owner(charge.chargeId, orderId, true)]];
    asked = 0;
    const withheldBefore = await metric('pcp_ledger_releases_total', { action: 'withheld' });
    const report = await service.reconcile();
    expect(report.released.map((release) => release.chargeId)).not.toContain(charge.chargeId);
    expect(report.withheld).toContainEqual(
      expect.objectContaining({ chargeId: charge.chargeId, orderId }),
    );
    // The live order's money stays where it is, and the charge is what it pays for.
    expect(chargesOf(charge.chargeId)).toMatchObject([{ status: 'captured', refundedAmount: 0 }]);
    expect(
      await db
        .selectFrom('charges')
        .select('ledger_class')
        .where('charge_id', '=', charge.chargeId)
        .executeTakeFirstOrThrow(),
    ).toEqual({ ledger_class: 'captured_for_order' });
    expect(
      await db
        .selectFrom('reconciler_actions')
        .select(['action', 'order_id'])
        .where('charge_id', '=', charge.chargeId)
        .execute(),
    ).toEqual([{ action: 'withheld', order_id: orderId }]);
    expect(await metric('pcp_ledger_releases_total', { action: 'withheld' })).toBe(
      withheldBefore + 1,
    );
    expect(logged.lines).toContainEqual(
      expect.objectContaining({
        chargeId: charge.chargeId,
        msg: "the reconciler withheld a release: a charge's owners changed between two reads",
      }),
    );
  });

  it('releases what both reads say nobody holds, and keeps what it did', async () => {
    now = new Date(Date.now() + 60_000);
    const ctx = customer();
    const orderId = randomUUID();
    const charge = await authorize(ctx, await vault(ctx), orderId);
    await bus.request(subjects.payments.capture, { chargeId: charge.chargeId }, ctx);
    answers = [[owner(charge.chargeId, orderId, false)]];
    asked = 0;
    const report = await service.reconcile();
    expect(report.released).toContainEqual(
      expect.objectContaining({ chargeId: charge.chargeId, action: 'refunded' }),
    );
    expect(chargesOf(charge.chargeId)).toMatchObject([{ status: 'refunded' }]);
    expect(
      await db
        .selectFrom('reconciler_actions')
        .select(['action', 'reason'])
        .where('charge_id', '=', charge.chargeId)
        .execute(),
    ).toEqual([{ action: 'refunded', reason: 'a capture with no order' }]);
  });
});

describe('the processor behind a circuit breaker', () => {
  it('never charges twice for one order across 50 retries while the processor times out', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const orderId = randomUUID();
    const timedOutBefore = await metric('pcp_payment_processor_calls_total', {
      outcome: 'timed_out',
    });
    // The processor makes the charge, then answers after our timeout: the answer is lost…
    processor.setFaults({ slowRate: 1, slowMs: TIMEOUT_MS * 2 });
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    // …and then stops answering at all while the caller asks again for the order.
    processor.setFaults({ slowRate: 0, hangRate: 1 });
    for (let attempt = 1; attempt < 50; attempt++) {
      await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    }
    // Until the breaker opened, the retries reached the processor and timed out there.
    const timedOut =
      (await metric('pcp_payment_processor_calls_total', { outcome: 'timed_out' })) -
      timedOutBefore;
    expect(timedOut).toBeGreaterThanOrEqual(VOLUME);

    processor.setFaults({ hangRate: 0 });
    if (service.breakerState() === 'open') await waitForHalfOpen();
    const healed = await authorize(ctx, paymentId, orderId);
    expect(healed.status).toBe('authorized');
    expect(chargesOf(healed.chargeId)).toHaveLength(1);
  }, 30_000);

  it('opens under processor faults, answers 503 at once while open, and closes after the processor heals', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    const logsBefore = breakerLog().length;
    processor.setFaults({ errorRate: 1 });
    await failUntilOpen(ctx, paymentId, VOLUME);

    processor.setFaults({ errorRate: 0 });
    const shortCircuitedBefore = await metric('pcp_payment_processor_calls_total', {
      outcome: 'short_circuited',
    });
    const started = performance.now();
    const error = await expectAppError(authorize(ctx, paymentId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS);
    expect(error.retryAfterSeconds).toBe(Math.ceil(RESET_MS / 1000));
    expect(await metric('pcp_payment_processor_calls_total', { outcome: 'short_circuited' })).toBe(
      shortCircuitedBefore + 1,
    );
    expect(await metric('pcp_payment_processor_breaker_state', {})).toBe(2);

    await waitForHalfOpen();
    expect(await metric('pcp_payment_processor_breaker_state', {})).toBe(1);
    expect((await authorize(ctx, paymentId)).status).toBe('authorized');
    expect(service.breakerState()).toBe('closed');
    expect(await metric('pcp_payment_processor_breaker_state', {})).toBe(0);
    // Every change was logged, the opening as a warning.
    expect(breakerLog().slice(logsBefore)).toEqual(['open', 'halfOpen', 'closed']);
    expect(logged.lines.find((line) => line.state === 'open')?.level).toBe(40);
  });

  it('answers a hanging processor with 503 within its timeout, and opens when it keeps hanging', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx);
    processor.setFaults({ hangRate: 1 });
    const started = performance.now();
    await expectAppError(authorize(ctx, paymentId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(took).toBeLessThan(TIMEOUT_MS + 1_000);
    await failUntilOpen(ctx, paymentId, 10);
  }, 30_000);

  it('charges nothing for the card whose authorization never answers, and leaves the order to ask again', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx, '4000000000007775');
    const orderId = randomUUID();
    const before = processor.charges().length;
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    await expectAppError(authorize(ctx, paymentId, orderId), 'PAYMENT_PROCESSOR_UNAVAILABLE');
    expect(processor.charges()).toHaveLength(before);
  });

  it('never opens on declines, however many', async () => {
    const ctx = customer();
    const paymentId = await vault(ctx, '4000000000000002');
    for (let i = 0; i < VOLUME * 4; i++) {
      await expectAppError(authorize(ctx, paymentId), 'PAYMENT_DECLINED');
    }
    expect(service.breakerState()).toBe('closed');
  });
});

describe('shutdown', () => {
  it('does not wait out a processor that hangs: the call in flight is aborted and answered', async () => {
    const other = createPaymentsService({
      nc: env.nc,
      logger: env.logger,
      metrics: env.newMetrics('payments'),
      subjectPrefix: `${env.prefix}_stopping`,
      requestTimeoutMs: 5_000,
      db,
      config: loadConfig(paymentsEnvSchema, {
        PAYMENT_PROCESSOR_URL: processorUrl,
        PAYMENT_PROCESSOR_TIMEOUT_MS: '30000',
      }),
    });
    await other.start();
    const otherBus = createBusClient(env.nc, {
      prefix: `${env.prefix}_stopping`,
      timeoutMs: 5_000,
      logger: env.logger,
    });
    const ctx = customer();
    const { card: vaulted } = await otherBus.request(
      subjects.payments.vaultCard,
      card('4000000000007775'),
      ctx,
    );
    const pending = otherBus.request(
      subjects.payments.authorize,
      {
        orderId: randomUUID(),
        paymentId: vaulted.paymentId,
        amount: 100,
        currency: 'USD',
        mode: 'live',
      },
      ctx,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = performance.now();
    await other.stop(300);
    expect(performance.now() - started).toBeLessThan(2_000);
    await expectAppError(pending, 'PAYMENT_PROCESSOR_UNAVAILABLE');
  });
});

describe('velocity and card limits', () => {
  const prefix = () => `${env.prefix}_velocity`;
  let guarded: ReturnType<typeof createPaymentsService>;
  let guardedBus: BusClient;
  const vaultAt = (ctx: RequestContext, cardNumber: string) =>
    guardedBus.request(subjects.payments.vaultCard, card(cardNumber), ctx);
  const authorizeAt = (ctx: RequestContext, paymentId: string, orderId = randomUUID()) =>
    guardedBus.request(
      subjects.payments.authorize,
      { orderId, paymentId, amount: 1_000, currency: 'USD', mode: ctx.mode ?? 'live' },
      ctx,
    );
  /** The processor fails every tokenize call: a vault answered otherwise never reached it. */
  const processorRefusesTokenize = () =>
    processor.setFaults({ errorRate: 1, operations: ['tokenize'] });

  beforeAll(async () => {
    guarded = createPaymentsService({
      nc: env.nc,
      logger: env.logger,
      metrics: env.newMetrics('payments'),
      subjectPrefix: prefix(),
      requestTimeoutMs: 5_000,
      db,
      clock: () => now,
      config: loadConfig(paymentsEnvSchema, {
        PAYMENT_PROCESSOR_URL: processorUrl,
        SANDBOX_PROCESSOR_URL: processorUrl,
        PAYMENTS_MAX_CARDS_PER_END_USER: '2',
        PAYMENTS_VAULT_ATTEMPTS_PER_WINDOW: '5',
        PAYMENTS_CARD_DECLINES_PER_WINDOW: '2',
      }),
    });
    await guarded.start();
    guardedBus = createBusClient(env.nc, {
      prefix: prefix(),
      timeoutMs: 5_000,
      logger: env.logger,
    });
  });

  afterAll(async () => {
    await guarded.stop();
  });

  it('refuses an end user vaulting too often with 429 PAYMENT_VELOCITY_EXCEEDED and Retry-After, before the processor', async () => {
    const ctx = customer();
    for (let i = 0; i < 5; i++) await vaultAt(ctx, '4242424242424242');
    processorRefusesTokenize();
    const refused = await expectAppError(
      vaultAt(ctx, '4242424242424242'),
      'PAYMENT_VELOCITY_EXCEEDED',
    );
    expect(refused.info.status).toBe(429);
    expect(refused.retryAfterSeconds).toBeGreaterThan(3_500);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(3_600);
    // Another end user of the partner is not held back by this one.
    processor.setFaults({ errorRate: 0 });
    await vaultAt(customer(), '4242424242424242');
  });

  it('refuses a card declined too often, across end users, without asking the processor: final for its order', async () => {
    const tester = customer();
    const { card: cvcCard } = await vaultAt(tester, testCards.incorrectCvc);
    for (let i = 0; i < 2; i++) {
      const declined = await expectAppError(
        authorizeAt(tester, cvcCard.paymentId),
        'PAYMENT_DECLINED',
      );
      expect(declined.errors?.[0]?.code).toBe('INCORRECT_CVC');
    }
    const processorCharges = processor.charges().length;
    const orderId = randomUUID();
    const refused = await expectAppError(
      authorizeAt(tester, cvcCard.paymentId, orderId),
      'PAYMENT_DECLINED',
    );
    expect(refused.errors?.[0]?.code).toBe('PAYMENT_VELOCITY_EXCEEDED');
    // The order's answer is recorded: asked again, the same refusal; nothing held anywhere.
    const again = await expectAppError(
      authorizeAt(tester, cvcCard.paymentId, orderId),
      'PAYMENT_DECLINED',
    );
    expect(again.errors?.[0]?.code).toBe('PAYMENT_VELOCITY_EXCEEDED');
    expect(processor.charges()).toHaveLength(processorCharges);
    const recorded = await db
      .selectFrom('charges')
      .select(['status', 'processor_authorization_id'])
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    expect(recorded).toEqual({ status: 'declined', processor_authorization_id: null });
    // The same card under another end user is refused before the processor tokenizes it.
    processorRefusesTokenize();
    const elsewhere = await expectAppError(
      vaultAt(customer(), testCards.incorrectCvc),
      'PAYMENT_VELOCITY_EXCEEDED',
    );
    expect(elsewhere.retryAfterSeconds).toBeGreaterThan(0);
    // The end user's other cards still pay.
    processor.setFaults({ errorRate: 0 });
    const { card: good } = await vaultAt(tester, '4111111111111111');
    const charge = await authorizeAt(tester, good.paymentId);
    expect(charge.status).toBe('authorized');
  });

  it("counts a card's declines per mode: test-mode declines never hold it back live, nor live ones in test", async () => {
    const testTenant = randomUUID();
    const tester = (): RequestContext => ({
      ...customer(),
      partnerId: testTenant,
      mode: 'test',
    });
    const declineTwice = async (ctx: RequestContext) => {
      const { card: vaulted } = await vaultAt(ctx, testCards.stolenCard);
      for (let i = 0; i < 2; i++) {
        const declined = await expectAppError(
          authorizeAt(ctx, vaulted.paymentId),
          'PAYMENT_DECLINED',
        );
        expect(declined.errors?.[0]?.code).toBe('CARD_LOST_OR_STOLEN');
      }
      const refused = await expectAppError(authorizeAt(ctx, vaulted.paymentId), 'PAYMENT_DECLINED');
      expect(refused.errors?.[0]?.code).toBe('PAYMENT_VELOCITY_EXCEEDED');
      return vaulted;
    };
    // Test mode reaches its limit for the card…
    const testCard = await declineTwice(tester());
    // …and live mode still vaults it and asks the processor, up to a limit of its own.
    await declineTwice(customer());
    // Two declines in each mode under the same card hash: the live ones did not add to test's.
    const { card_hash: hash } = await db
      .selectFrom('cards')
      .select('card_hash')
      .where('payment_id', '=', testCard.paymentId)
      .executeTakeFirstOrThrow();
    const counted = async (mode: string) => {
      const { count } = await db
        .selectFrom('velocity_events')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .where('scope', '=', 'decline')
        .where('subject', '=', `${mode}/${hash!}`)
        .executeTakeFirstOrThrow();
      return Number(count);
    };
    expect({ test: await counted('test'), live: await counted('live') }).toEqual({
      test: 2,
      live: 2,
    });
    // A fresh test tenant's vault of the card is refused (test declines counted), a live one's not.
    processorRefusesTokenize();
    await expectAppError(
      vaultAt({ ...tester(), partnerId: randomUUID() }, testCards.stolenCard),
      'PAYMENT_VELOCITY_EXCEEDED',
    );
    processor.setFaults({ errorRate: 0 });
  });

  it('forgets events the window has left behind as new ones are counted, whatever their subject', async () => {
    const stale = Array.from({ length: 3 }, () => ({
      scope: 'vault' as const,
      subject: `gone/${randomUUID()}`,
      at: sql<Date>`now() - interval '2 hours'`,
    }));
    await db.insertInto('velocity_events').values(stale).execute();
    await vaultAt(customer(), '4242424242424242');
    const left = await db
      .selectFrom('velocity_events')
      .select('subject')
      .where(
        'subject',
        'in',
        stale.map((event) => event.subject),
      )
      .execute();
    expect(left).toEqual([]);
  });

  it('caps an end user’s cards at the configured limit before tokenizing, and a deleted card frees room', async () => {
    const ctx = customer();
    await vaultAt(ctx, '4242424242424242');
    const { card: second } = await vaultAt(ctx, '4111111111111111');
    processorRefusesTokenize();
    await expectAppError(vaultAt(ctx, '4012888888881881'), 'CARD_LIMIT_REACHED');
    processor.setFaults({ errorRate: 0 });
    // A card the end user holds may be vaulted again at the limit: it keeps its paymentId.
    const { card: again, created } = await vaultAt(ctx, '4111111111111111');
    expect({ paymentId: again.paymentId, created }).toEqual({
      paymentId: second.paymentId,
      created: false,
    });
    await guardedBus.request(subjects.payments.deleteCard, { paymentId: second.paymentId }, ctx);
    const { created: third } = await vaultAt(ctx, '4012888888881881');
    expect(third).toBe(true);
  });
});
