import {
  sandboxCustomerPartnerId,
  subjects,
  type PartnerMode,
  type VaultCardInput,
} from '@pcp/contracts';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
  type ServiceMetrics,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { insertLiveCard } from '@pcp/testing/live-card';
import {
  createPaymentsService,
  PAYMENTS_SCHEMA,
  paymentsEnvSchema,
  type PaymentsDatabase,
} from '../../src/app.js';

/** Two simulators stand for two processors: the live one and the sandbox of test mode. */
let env: TestEnvironment;
let db: Kysely<PaymentsDatabase>;
let live: ProcessorSimulator;
let sandbox: ProcessorSimulator;
let liveUrl: string;
let sandboxUrl: string;
const started: { stop(): Promise<void> }[] = [];

/** A payments service on its own subjects, with the processors `config` names. */
async function paymentsWith(
  name: string,
  config: Record<string, string>,
): Promise<{ bus: BusClient; registry: ServiceMetrics['registry'] }> {
  const metrics = env.newMetrics('payments');
  const service = createPaymentsService({
    nc: env.nc,
    logger: env.logger,
    metrics,
    subjectPrefix: `${env.prefix}_${name}`,
    requestTimeoutMs: 5_000,
    db,
    config: loadConfig(paymentsEnvSchema, { PAYMENTS_RECONCILE_INTERVAL_MS: '0', ...config }),
  });
  await service.start();
  started.push({ stop: () => service.stop() });
  const bus = createBusClient(env.nc, {
    prefix: `${env.prefix}_${name}`,
    timeoutMs: 5_000,
    logger: env.logger,
  });
  return { bus, registry: metrics.registry };
}

/** A distribution partner's end user, of one mode (a test key authenticates as its test tenant). */
const customer = (mode: PartnerMode, partnerId = randomUUID()): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'distribution',
  endUserId: `user-${randomUUID()}`,
  paymentTypes: ['CARD'],
  mode,
});

const visa: VaultCardInput = {
  cardNumber: '4242424242424242',
  expMonth: 12,
  expYear: 2035,
  cvc: '123',
  cardholderName: 'Ada Lovelace',
};

/** What a simulator recorded for one of our charges (our processor keys name the charge). */
const chargesAt = (processor: ProcessorSimulator, chargeId: string) =>
  processor.charges().filter((charge) => charge.idempotencyKey.includes(chargeId));

async function processorCalls(registry: ServiceMetrics['registry']): Promise<number> {
  const metrics = await registry.getMetricsAsJSON();
  const calls = metrics.find((entry) => entry.name === 'pcp_payment_processor_calls_total');
  return (calls?.values ?? []).reduce((sum, value) => sum + value.value, 0);
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<PaymentsDatabase>({
    url: env.databaseUrl,
    schema: PAYMENTS_SCHEMA,
    applicationName: 'test-payment-modes',
  });
  live = createProcessorSimulator({ apiKey: 'sk_test_simulator_live' });
  sandbox = createProcessorSimulator();
  [liveUrl, sandboxUrl] = await Promise.all([live.listen(), sandbox.listen()]);
});

afterAll(async () => {
  for (const service of started) await service.stop();
  await Promise.all([live.close(), sandbox.close()]);
  await db.destroy();
  await env.cleanup();
});

describe('with a live processor configured', () => {
  let bus: BusClient;

  beforeAll(async () => {
    ({ bus } = await paymentsWith('modes', {
      PAYMENT_PROCESSOR_URL: liveUrl,
      PAYMENT_PROCESSOR_API_KEY: 'sk_test_simulator_live',
      SANDBOX_PROCESSOR_URL: sandboxUrl,
    }));
  });

  async function charge(ctx: RequestContext, mode: PartnerMode) {
    const { card } = await bus.request(subjects.payments.vaultCard, visa, ctx);
    const orderId = randomUUID();
    const authorized = await bus.request(
      subjects.payments.authorize,
      { orderId, paymentId: card.paymentId, amount: 2_500, currency: 'USD', mode },
      ctx,
    );
    return { card, orderId, authorized };
  }

  it('charges a test-mode card on the sandbox processor, never the live one, to its refund', async () => {
    const ctx = customer('test');
    const { authorized } = await charge(ctx, 'test');
    expect(authorized.status).toBe('authorized');
    // Later calls come without a mode (as from a background job): the charge's own decides.
    const { mode: _mode, ...withoutMode } = ctx;
    const captured = await bus.request(
      subjects.payments.capture,
      { chargeId: authorized.chargeId },
      withoutMode,
    );
    expect(captured.status).toBe('captured');
    const refunded = await bus.request(
      subjects.payments.refund,
      { chargeId: authorized.chargeId, amount: 2_500, idempotencyKey: 'cancel' },
      withoutMode,
    );
    expect(refunded.status).toBe('refunded');
    const [atSandbox] = chargesAt(sandbox, authorized.chargeId);
    expect(atSandbox).toMatchObject({
      amount: 2_500,
      capturedAmount: 2_500,
      refundedAmount: 2_500,
    });
    expect(chargesAt(live, authorized.chargeId)).toEqual([]);
  });

  it("vaults the sandbox customer's test card for it alone, the same card on each call", async () => {
    const sandboxCustomer = customer('test', sandboxCustomerPartnerId);
    const first = await bus.request(subjects.payments.sandboxCustomerCard, {}, sandboxCustomer);
    const again = await bus.request(subjects.payments.sandboxCustomerCard, {}, sandboxCustomer);
    expect(again.paymentId).toBe(first.paymentId);
    const [row] = await db
      .selectFrom('cards')
      .select(['partner_id', 'mode', 'last4'])
      .where('payment_id', '=', first.paymentId)
      .execute();
    expect(row).toEqual({ partner_id: sandboxCustomerPartnerId, mode: 'test', last4: '4242' });
    // Any other tenant, or the sandbox customer's id with a live key's mode, is refused.
    await expectAppError(
      bus.request(subjects.payments.sandboxCustomerCard, {}, customer('test')),
      'FORBIDDEN',
    );
    await expectAppError(
      bus.request(
        subjects.payments.sandboxCustomerCard,
        {},
        customer('live', sandboxCustomerPartnerId),
      ),
      'FORBIDDEN',
    );
  });

  it('charges a live-mode card on the live processor only', async () => {
    const { authorized } = await charge(customer('live'), 'live');
    expect(chargesAt(live, authorized.chargeId)).toHaveLength(1);
    expect(chargesAt(sandbox, authorized.chargeId)).toEqual([]);
  });

  it('releases a test order from a background path (no mode on the request) at the sandbox', async () => {
    const ctx = customer('test');
    const { orderId, authorized } = await charge(ctx, 'test');
    const { mode: _mode, ...background } = { ...ctx, requestId: `sweep-${orderId}` };
    const { charge: released } = await bus.request(
      subjects.payments.release,
      { orderId },
      background,
    );
    expect(released?.status).toBe('voided');
    expect(chargesAt(sandbox, authorized.chargeId)[0]?.status).toBe('voided');
    expect(chargesAt(live, authorized.chargeId)).toEqual([]);
  });

  it("refuses a card of one mode for an order of the other (its token is the other processor's)", async () => {
    const ctx = customer('test');
    const { card } = await bus.request(subjects.payments.vaultCard, visa, ctx);
    const chargesBefore = live.charges().length;
    await expectAppError(
      bus.request(
        subjects.payments.authorize,
        {
          orderId: randomUUID(),
          paymentId: card.paymentId,
          amount: 100,
          currency: 'USD',
          mode: 'live',
        },
        ctx,
      ),
      'PAYMENT_TOKEN_INVALID',
    );
    expect(live.charges()).toHaveLength(chargesBefore);
  });
});

describe('without a live processor', () => {
  let bus: BusClient;
  let registry: ServiceMetrics['registry'];

  beforeAll(async () => {
    ({ bus, registry } = await paymentsWith('sandbox_only', {
      SANDBOX_PROCESSOR_URL: sandboxUrl,
    }));
  });

  it('refuses live vaulting and authorizing with 503 LIVE_PAYMENTS_NOT_CONFIGURED, asking no processor', async () => {
    const ctx = customer('live');
    const sandboxCharges = sandbox.charges().length;
    const callsBefore = await processorCalls(registry);
    const refused = await expectAppError(
      bus.request(subjects.payments.vaultCard, visa, ctx),
      'LIVE_PAYMENTS_NOT_CONFIGURED',
    );
    expect(refused.info).toMatchObject({ status: 503, retryable: false });
    // A live card vaulted while a live processor was configured: authorizing it is refused too.
    const paymentId = await insertLiveCard(db, {
      partnerId: ctx.partnerId!,
      endUserId: ctx.endUserId!,
    });
    const orderId = randomUUID();
    await expectAppError(
      bus.request(
        subjects.payments.authorize,
        { orderId, paymentId, amount: 100, currency: 'USD', mode: 'live' },
        ctx,
      ),
      'LIVE_PAYMENTS_NOT_CONFIGURED',
    );
    // Refused before any attempt was recorded, and the sandbox never heard of it.
    const recorded = await db
      .selectFrom('charges')
      .select('charge_id')
      .where('order_id', '=', orderId)
      .execute();
    expect(recorded).toEqual([]);
    expect(sandbox.charges()).toHaveLength(sandboxCharges);
    expect(await processorCalls(registry)).toBe(callsBefore);
  });

  it('still charges test mode on the sandbox processor', async () => {
    const ctx = customer('test');
    const { card } = await bus.request(subjects.payments.vaultCard, visa, ctx);
    const authorized = await bus.request(
      subjects.payments.authorize,
      {
        orderId: randomUUID(),
        paymentId: card.paymentId,
        amount: 700,
        currency: 'USD',
        mode: 'test',
      },
      ctx,
    );
    expect(authorized.status).toBe('authorized');
    expect(chargesAt(sandbox, authorized.chargeId)).toHaveLength(1);
  });
});
