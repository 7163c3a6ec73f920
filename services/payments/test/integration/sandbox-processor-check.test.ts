/**
 * In production, test money goes only to a sandbox processor that says it is a test
 * processor: the real simulator does (GET /health livemode false); a processor that answers as
 * a live one (a real HTTP server here, not a mock of the adapter) never gets a test-mode call,
 * while live mode goes on.
 */
import { subjects, type PartnerMode, type VaultCardInput } from '@pcp/contracts';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import {
  createPaymentsService,
  PAYMENTS_SCHEMA,
  paymentsEnvSchema,
  type PaymentsConfig,
  type PaymentsDatabase,
} from '../../src/app.js';
import { createHttpPaymentProcessor } from '../../src/processor/http-payment-processor.js';

let env: TestEnvironment;
let db: Kysely<PaymentsDatabase>;
let simulator: ProcessorSimulator;
let simulatorUrl: string;
const closing: (() => Promise<void>)[] = [];

/** What a production deployment sets (a card-hash key of its own); no live processor. */
const production = {
  NODE_ENV: 'production',
  PAYMENTS_CARD_HASH_KEY: 'b7c1d0e4f5a6978812ab34cd56ef7890',
  PAYMENTS_RECONCILE_INTERVAL_MS: '0',
};

type Health = (response: ServerResponse) => void;
const json =
  (status: number, body: unknown): Health =>
  (response) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/**
 * A processor on a real HTTP server that takes every card (as a live one would take a real
 * card): `health` answers GET /health; every request is kept.
 */
async function fakeProcessor(health: Health) {
  const requests: { method: string; path: string; authorization?: string }[] = [];
  const state = { health };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = request.url ?? '';
    const { authorization } = request.headers;
    requests.push({
      method: request.method ?? '',
      path,
      ...(authorization ? { authorization } : {}),
    });
    request.resume();
    if (request.method === 'GET' && path === '/health') return state.health(response);
    if (request.method === 'POST' && path === '/v1/tokens') {
      return json(201, { token: `tok_${randomUUID()}`, fingerprint: 'fp_1', last4: '4242' })(
        response,
      );
    }
    if (request.method === 'POST' && path === '/v1/authorizations') {
      return json(201, { id: `auth_${randomUUID()}` })(response);
    }
    return json(404, { error: { type: 'invalid_request_error', code: 'resource_missing' } })(
      response,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closing.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    /** Calls of the processor API (anything but the health question). */
    apiCalls: () => requests.filter((request) => request.path !== '/health'),
    healthChecks: () => requests.filter((request) => request.path === '/health').length,
    answerHealth(next: Health) {
      state.health = next;
    },
  };
}

/** A payments service on its own subjects with `config`, logging into `logs`. */
async function paymentsWith(config: PaymentsConfig) {
  const logs = capturingLogger();
  const prefix = `${env.prefix}_${randomUUID().slice(0, 8)}`;
  const service = createPaymentsService({
    nc: env.nc,
    logger: logs.logger,
    metrics: env.newMetrics('payments'),
    subjectPrefix: prefix,
    requestTimeoutMs: 5_000,
    db,
    config,
  });
  await service.start();
  closing.push(() => service.stop());
  const bus: BusClient = createBusClient(env.nc, { prefix, timeoutMs: 5_000, logger: env.logger });
  return { bus, logs };
}

const customer = (mode: PartnerMode): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
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

/** A test card the sandbox vaulted earlier (before this process started), straight to the table. */
async function insertTestCard(ctx: RequestContext): Promise<string> {
  const paymentId = randomUUID();
  await db
    .insertInto('cards')
    .values({
      payment_id: paymentId,
      partner_id: ctx.partnerId!,
      end_user_id: ctx.endUserId!,
      processor_token: 'tok_test',
      fingerprint: `fp-${paymentId}`,
      card_hash: null,
      brand: 'VISA',
      last4: '4242',
      exp_month: 12,
      exp_year: 2035,
      mode: 'test',
      deleted_at: null,
    })
    .execute();
  return paymentId;
}

const refusals = (lines: { msg: string; level: number }[]) =>
  lines.filter((line) => line.level === 50 && line.msg.startsWith('the sandbox processor'));

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<PaymentsDatabase>({
    url: env.databaseUrl,
    schema: PAYMENTS_SCHEMA,
    applicationName: 'test-sandbox-processor-check',
  });
  simulator = createProcessorSimulator({ apiKey: 'sk_test_simulator_live' });
  simulatorUrl = await simulator.listen();
});

afterAll(async () => {
  for (const close of closing.reverse()) await close();
  await simulator.close();
  await db.destroy();
  await env.cleanup();
});

describe('the processor simulator as the sandbox, in production', () => {
  it('declares itself a test processor, so test-mode cards are vaulted and charged on it', async () => {
    const sandbox = createProcessorSimulator();
    const sandboxUrl = await sandbox.listen();
    closing.push(() => sandbox.close());
    const { bus, logs } = await paymentsWith(
      loadConfig(paymentsEnvSchema, { ...production, SANDBOX_PROCESSOR_URL: sandboxUrl }),
    );
    const ctx = customer('test');
    const { card } = await bus.request(subjects.payments.vaultCard, visa, ctx);
    const authorized = await bus.request(
      subjects.payments.authorize,
      {
        orderId: randomUUID(),
        paymentId: card.paymentId,
        amount: 900,
        currency: 'USD',
        mode: 'test',
      },
      ctx,
    );
    expect(authorized.status).toBe('authorized');
    expect(sandbox.charges().filter((charge) => charge.amount === 900)).toHaveLength(1);
    expect(refusals(logs.lines)).toEqual([]);
  });
});

describe('a sandbox processor that answers as a live one, in production', () => {
  let fake: Awaited<ReturnType<typeof fakeProcessor>>;
  let bus: BusClient;
  let logs: ReturnType<typeof capturingLogger>;

  beforeAll(async () => {
    fake = await fakeProcessor(json(200, { status: 'ok', livemode: true }));
    // The live processor is the simulator over http here: production's https rule is the
    // configuration's own (config.test.ts), so it is set after parsing.
    const config: PaymentsConfig = {
      ...loadConfig(paymentsEnvSchema, { ...production, SANDBOX_PROCESSOR_URL: fake.url }),
      PAYMENT_PROCESSOR_URL: simulatorUrl,
      PAYMENT_PROCESSOR_API_KEY: 'sk_test_simulator_live',
    };
    ({ bus, logs } = await paymentsWith(config));
  });

  it('gets no test-mode call: vaulting and authorizing answer 503 SANDBOX_PROCESSOR_UNVERIFIED', async () => {
    const ctx = customer('test');
    const refused = await expectAppError(
      bus.request(subjects.payments.vaultCard, visa, ctx),
      'SANDBOX_PROCESSOR_UNVERIFIED',
    );
    expect(refused.info).toMatchObject({ status: 503, retryable: true });
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);

    const paymentId = await insertTestCard(ctx);
    const orderId = randomUUID();
    await expectAppError(
      bus.request(
        subjects.payments.authorize,
        { orderId, paymentId, amount: 500, currency: 'USD', mode: 'test' },
        ctx,
      ),
      'SANDBOX_PROCESSOR_UNVERIFIED',
    );
    // Refused before an attempt was recorded; the processor was asked what it is, nothing else.
    const recorded = await db
      .selectFrom('charges')
      .select('charge_id')
      .where('order_id', '=', orderId)
      .execute();
    expect(recorded).toEqual([]);
    expect(fake.apiCalls()).toEqual([]);
    expect(fake.healthChecks()).toBeGreaterThanOrEqual(1);
    expect(refusals(logs.lines)[0]).toMatchObject({
      processor: 'sandbox',
      msg: expect.stringContaining('did not declare itself a test processor') as unknown,
    });
  });

  it('leaves live mode as it is: live cards go to the live processor', async () => {
    const ctx = customer('live');
    const { card } = await bus.request(subjects.payments.vaultCard, visa, ctx);
    const authorized = await bus.request(
      subjects.payments.authorize,
      {
        orderId: randomUUID(),
        paymentId: card.paymentId,
        amount: 1_234,
        currency: 'USD',
        mode: 'live',
      },
      ctx,
    );
    expect(authorized.status).toBe('authorized');
    expect(simulator.charges().filter((charge) => charge.amount === 1_234)).toHaveLength(1);
    expect(fake.apiCalls()).toEqual([]);
  });
});

describe('asking the sandbox processor, in production', () => {
  it('asks once for all the first calls at once, and trusts the answer from then on', async () => {
    const fake = await fakeProcessor(json(200, { status: 'ok', livemode: false }));
    const { bus } = await paymentsWith(
      loadConfig(paymentsEnvSchema, { ...production, SANDBOX_PROCESSOR_URL: fake.url }),
    );
    const vault = () => bus.request(subjects.payments.vaultCard, visa, customer('test'));
    await Promise.all(Array.from({ length: 5 }, vault));
    expect(fake.healthChecks()).toBe(1);
    // A processor that stops saying so later is not asked again: the process trusts it.
    fake.answerHealth(json(200, { status: 'ok', livemode: true }));
    await vault();
    expect(fake.healthChecks()).toBe(1);
    expect(fake.apiCalls().filter((call) => call.path === '/v1/tokens')).toHaveLength(6);
  });

  it('refuses at once until the pause is over, then asks again (a processor that could not answer)', async () => {
    const fake = await fakeProcessor(json(503, { error: { type: 'api_error' } }));
    const { bus, logs } = await paymentsWith(
      loadConfig(paymentsEnvSchema, {
        ...production,
        SANDBOX_PROCESSOR_URL: fake.url,
        PAYMENT_BREAKER_RESET_MS: '300',
      }),
    );
    const vault = () => bus.request(subjects.payments.vaultCard, visa, customer('test'));
    await expectAppError(vault(), 'SANDBOX_PROCESSOR_UNVERIFIED');
    await expectAppError(vault(), 'SANDBOX_PROCESSOR_UNVERIFIED');
    expect(fake.healthChecks()).toBe(1);
    expect(refusals(logs.lines)).toEqual([
      expect.objectContaining({
        msg: expect.stringContaining('could not be asked') as unknown,
      }),
    ]);

    fake.answerHealth(json(200, { status: 'ok', livemode: false }));
    await new Promise((resolve) => setTimeout(resolve, 350));
    const { card } = await vault();
    expect(card.last4).toBe('4242');
    expect(fake.healthChecks()).toBe(2);
    expect(fake.apiCalls()).toHaveLength(1);
  });
});

describe('what counts as declaring a test processor', () => {
  it('only 200 with livemode false; any other answer is no, and no answer an error', async () => {
    const fake = await fakeProcessor(json(200, { status: 'ok', livemode: false }));
    const http = createHttpPaymentProcessor({
      url: `${fake.url}/`,
      apiKey: 'sk_x',
      connections: 1,
    });
    closing.push(() => http.close());
    const ask = () => http.declaresTestMode({ signal: AbortSignal.timeout(2_000) });
    expect(await ask()).toBe(true);
    const noes: Health[] = [
      json(200, { status: 'ok', livemode: true }),
      json(200, { status: 'ok' }),
      json(200, { livemode: 'false' }),
      json(200, null),
      json(404, { error: { code: 'resource_missing' } }),
      json(401, { livemode: false }),
      (response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>OK</h1>'),
    ];
    for (const answer of noes) {
      fake.answerHealth(answer);
      expect(await ask()).toBe(false);
    }
    fake.answerHealth(json(502, { livemode: false }));
    await expect(ask()).rejects.toThrow(/answered 502/);
    // The question carries no key, and is all that was sent.
    expect(fake.requests).toHaveLength(noes.length + 2);
    expect(fake.requests.every((request) => request.path === '/health')).toBe(true);
    expect(fake.requests.some((request) => request.authorization !== undefined)).toBe(false);
  });
});
