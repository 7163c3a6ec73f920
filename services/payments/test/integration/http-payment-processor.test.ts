import {
  createProcessorSimulator,
  testCards,
  type ProcessorSimulator,
} from '@pcp/processor-simulator';
import { createMetrics } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger } from '@pcp/testing/capturing-logger';
import { countsBy, growth } from '@pcp/testing/metrics';
import {
  createProcessorMetrics,
  guardPaymentProcessor,
  type BreakerOptions,
  type GuardedPaymentProcessor,
} from '../../src/processor/guarded-payment-processor.js';
import { createHttpPaymentProcessor } from '../../src/processor/http-payment-processor.js';
import {
  ProcessorRejectedError,
  ProcessorUnavailableError,
  type PaymentProcessor,
  type ProcessorAuthorization,
} from '../../src/processor/payment-processor.js';

const API_KEY = 'sk_test_simulator';
const TIMEOUT_MS = 300;
const CALLS = 'pcp_payment_processor_calls_total';

let simulator: ProcessorSimulator;
let http: ReturnType<typeof createHttpPaymentProcessor>;
let processor: GuardedPaymentProcessor;
let registry: ReturnType<typeof createMetrics>['registry'];
const breakers: GuardedPaymentProcessor[] = [];

/** The adapter behind a breaker of its own, which never opens unless a test says so. */
function guard(target: PaymentProcessor, options: Partial<BreakerOptions> = {}) {
  const metrics = createMetrics('payments');
  const guarded = guardPaymentProcessor(target, {
    timeoutMs: TIMEOUT_MS,
    errorThresholdPercent: 50,
    volumeThreshold: 1_000,
    windowMs: 10_000,
    resetMs: 60_000,
    capacity: 10,
    ...options,
    name: 'live',
    logger: capturingLogger().logger,
    metrics: createProcessorMetrics(metrics.registry),
  });
  breakers.push(guarded);
  return { guarded, registry: metrics.registry };
}

const newKey = () => `test-${randomUUID()}`;

async function authorizeCard(number: string, reference: string, amount = 1_000) {
  const { token } = await processor.tokenize(
    { number, expMonth: 12, expYear: 2030, cvc: '123', name: 'Ada Lovelace' },
    { idempotencyKey: newKey() },
  );
  return processor.authorize(
    { token, amount, currency: 'EUR', reference },
    { idempotencyKey: newKey() },
  );
}

async function authorized(reference: string = randomUUID()): Promise<string> {
  const outcome = await authorizeCard(testCards.success, reference);
  if (outcome.outcome !== 'authorized') throw new Error(`not authorized: ${outcome.reason}`);
  return outcome.authorizationId;
}

const retrieve = (authorizationId: string) => processor.retrieve({ authorizationId }, {});

beforeAll(async () => {
  simulator = createProcessorSimulator({ apiKey: API_KEY });
  const url = await simulator.listen();
  http = createHttpPaymentProcessor({ url, apiKey: API_KEY, connections: 4 });
  ({ guarded: processor, registry } = guard(http));
});

afterEach(() => simulator.reset());

afterAll(async () => {
  for (const breaker of breakers) breaker.shutdown();
  await http.close();
  await simulator.close();
});

describe('lookups at the simulator', () => {
  it('retrieves an authorization and finds it by the reference it was made with', async () => {
    const reference = randomUUID();
    const authorizationId = await authorized(reference);
    expect(simulator.charges()).toMatchObject([{ id: authorizationId, reference }]);
    const expected: ProcessorAuthorization = {
      authorizationId,
      status: 'authorized',
      amount: 1_000,
      currency: 'EUR',
      capturedAmount: 0,
      refundedAmount: 0,
      reference,
      declineCode: null,
    };
    expect(await retrieve(authorizationId)).toEqual(expected);
    expect(await processor.findAuthorizations({ reference }, {})).toEqual([expected]);
  });

  it('finds a decline, whose answer carried no id, by its reference with its decline code', async () => {
    const reference = randomUUID();
    expect(await authorizeCard(testCards.declined, reference, 700)).toEqual({
      outcome: 'declined',
      reason: 'card_declined',
    });
    const retried = await authorized(reference);
    const found = await processor.findAuthorizations({ reference }, {});
    expect(found).toEqual([
      {
        authorizationId: expect.stringMatching(/^auth_/),
        status: 'declined',
        amount: 700,
        currency: 'EUR',
        capturedAmount: 0,
        refundedAmount: 0,
        reference,
        declineCode: 'card_declined',
      },
      expect.objectContaining({ authorizationId: retried, status: 'authorized' }),
    ]);
    expect(await retrieve(found[0]?.authorizationId ?? '')).toEqual(found[0]);
  });

  it('follows authorizations through capture, void and refunds', async () => {
    const captured = await authorized();
    await processor.capture(
      { authorizationId: captured, amount: 600 },
      { idempotencyKey: newKey() },
    );
    expect(await retrieve(captured)).toMatchObject({ status: 'captured', capturedAmount: 600 });
    await processor.refund(
      { authorizationId: captured, amount: 100 },
      { idempotencyKey: newKey() },
    );
    expect(await retrieve(captured)).toMatchObject({
      status: 'partially_refunded',
      capturedAmount: 600,
      refundedAmount: 100,
    });
    await processor.refund(
      { authorizationId: captured, amount: 500 },
      { idempotencyKey: newKey() },
    );
    expect(await retrieve(captured)).toMatchObject({ status: 'refunded', refundedAmount: 600 });

    const voided = await authorized();
    await processor.void({ authorizationId: voided }, { idempotencyKey: newKey() });
    expect(await retrieve(voided)).toMatchObject({ status: 'voided', capturedAmount: 0 });
  });

  it('answers undefined for an unknown id and no authorizations for an unknown reference', async () => {
    expect(await retrieve('auth_unknown')).toBeUndefined();
    expect(await processor.findAuthorizations({ reference: randomUUID() }, {})).toEqual([]);
  });

  it('tells what a capture did when its answer was lost', async () => {
    const authorizationId = await authorized();
    simulator.setFaults({ slowRate: 1, slowMs: 5_000, operations: ['capture'] });
    await expect(
      processor.capture({ authorizationId }, { idempotencyKey: newKey() }),
    ).rejects.toBeInstanceOf(ProcessorUnavailableError);
    expect(await retrieve(authorizationId)).toMatchObject({
      status: 'captured',
      capturedAmount: 1_000,
    });
  });

  it('labels both lookups `retrieve` in the metrics', async () => {
    const authorizationId = await authorized();
    const calls = await countsBy(registry, CALLS, 'operation');
    const durations = await countsBy(
      registry,
      'pcp_payment_processor_duration_seconds',
      'operation',
    );
    await retrieve(authorizationId);
    await processor.findAuthorizations({ reference: 'nobody' }, {});
    expect(growth(calls, await countsBy(registry, CALLS, 'operation'))).toEqual({ retrieve: 2 });
    expect(
      growth(
        durations,
        await countsBy(registry, 'pcp_payment_processor_duration_seconds', 'operation'),
      ),
    ).toEqual({ retrieve: 2 });
  });
});

describe('lookups at a failing processor', () => {
  it('times a hanging lookup out, and counts it against the breaker the other calls share', async () => {
    const { guarded, registry: own } = guard(http, { volumeThreshold: 2 });
    simulator.setFaults({ hangRate: 1, operations: ['retrieve'] });
    const before = await countsBy(own, CALLS, 'outcome');
    for (const lookup of [
      () => guarded.retrieve({ authorizationId: 'auth_any' }, {}),
      () => guarded.findAuthorizations({ reference: 'any' }, {}),
    ]) {
      const started = performance.now();
      await expect(lookup()).rejects.toThrow(
        new ProcessorUnavailableError(
          `The payment processor did not answer within ${TIMEOUT_MS} ms`,
        ),
      );
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(took).toBeLessThan(TIMEOUT_MS + 1_000);
    }
    expect(growth(before, await countsBy(own, CALLS, 'outcome'))).toEqual({ timed_out: 2 });
    expect(guarded.state()).toBe('open');
    // Authorizations are answered at once by the simulator, but the open breaker refuses them.
    await expect(
      guarded.authorize(
        { token: 'tok_any', amount: 100, currency: 'EUR', reference: 'any' },
        { idempotencyKey: newKey() },
      ),
    ).rejects.toThrow('The payment processor breaker is open');
  });

  it('gives up a lookup when its signal aborts, and fails one answered 500', async () => {
    simulator.setFaults({ hangRate: 1, operations: ['retrieve'] });
    await expect(
      http.retrieve({ authorizationId: 'auth_any' }, { signal: AbortSignal.timeout(100) }),
    ).rejects.toThrow(new ProcessorUnavailableError('The processor could not be reached'));
    simulator.setFaults({ hangRate: 0, errorRate: 1 });
    await expect(processor.findAuthorizations({ reference: 'any' }, {})).rejects.toThrow(
      new ProcessorUnavailableError('The processor answered 500'),
    );
  });
});

describe('lookups at a processor answering nonsense', () => {
  let server: Server;
  let liar: ReturnType<typeof createHttpPaymentProcessor>;
  let guardedLiar: GuardedPaymentProcessor;
  let next = { status: 200, body: '' };
  const requests: { method?: string; url?: string; headers: IncomingHttpHeaders }[] = [];

  const reference = 'order 1/2?&';
  const valid = {
    id: 'auth_1',
    status: 'captured',
    amount: 1_000,
    currency: 'EUR',
    capturedAmount: 1_000,
    refundedAmount: 0,
    reference,
    createdAt: '2026-11-23T10:00:00.000Z',
  };
  const answer = (body: unknown, status = 200) => ({ status, body: JSON.stringify(body) });

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push({ method: request.method, url: request.url, headers: request.headers });
      request.resume();
      response.writeHead(next.status, { 'content-type': 'application/json' }).end(next.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    liar = createHttpPaymentProcessor({
      url: `http://127.0.0.1:${port}`,
      apiKey: 'sk_liar',
      connections: 2,
    });
    ({ guarded: guardedLiar } = guard(liar));
  });

  afterAll(async () => {
    await liar.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads well-formed answers, sending the key and no Idempotency-Key', async () => {
    next = answer(valid);
    expect(await liar.retrieve({ authorizationId: 'auth_1' }, {})).toEqual({
      authorizationId: 'auth_1',
      status: 'captured',
      amount: 1_000,
      currency: 'EUR',
      capturedAmount: 1_000,
      refundedAmount: 0,
      reference,
      declineCode: null,
    });
    next = answer({ authorizations: [valid, { ...valid, id: 'auth_2', reference }] });
    expect(await liar.findAuthorizations({ reference }, {})).toHaveLength(2);
    expect(requests.slice(-2)).toEqual([
      expect.objectContaining({ method: 'GET', url: '/v1/authorizations/auth_1' }),
      expect.objectContaining({
        method: 'GET',
        url: `/v1/authorizations?reference=${encodeURIComponent(reference)}`,
      }),
    ]);
    for (const { headers } of requests.slice(-2)) {
      expect(headers.authorization).toBe('Bearer sk_liar');
      expect(headers['idempotency-key']).toBeUndefined();
    }
  });

  it.each([
    ['an unknown status', answer({ ...valid, status: 'settled' })],
    ['a fractional amount', answer({ ...valid, amount: 10.5 })],
    ['an amount as a string', answer({ ...valid, amount: '1000' })],
    ['a negative captured amount', answer({ ...valid, capturedAmount: -1 })],
    ['no refunded amount', answer({ ...valid, refundedAmount: undefined })],
    ['a lower-case currency', answer({ ...valid, currency: 'eur' })],
    ['a numeric reference', answer({ ...valid, reference: 5 })],
    ['a decline code that is an object', answer({ ...valid, declineCode: {} })],
    ['another authorization', answer({ ...valid, id: 'auth_2' })],
    ['null', answer(null)],
    ['an array', answer([valid])],
    ['text that is not JSON', { status: 200, body: '<html>' }],
    ['more than 64 KiB', answer({ ...valid, padding: 'x'.repeat(70_000) })],
    ['a 500', answer({ error: { type: 'api_error', code: 'internal_error' } }, 500)],
  ])('retrieve fails as unavailable on %s', async (_case, body) => {
    next = body;
    for (const target of [liar, guardedLiar]) {
      await expect(target.retrieve({ authorizationId: 'auth_1' }, {})).rejects.toBeInstanceOf(
        ProcessorUnavailableError,
      );
    }
  });

  it.each([
    ['no list', answer({})],
    ['a list that is an object', answer({ authorizations: { 0: valid } })],
    ['more than 100', answer({ authorizations: Array(101).fill(valid) })],
    ['one malformed entry', answer({ authorizations: [valid, { ...valid, status: 'bogus' }] })],
    ['another reference', answer({ authorizations: [{ ...valid, reference: 'order 2' }] })],
    ['no reference', answer({ authorizations: [{ ...valid, reference: null }] })],
  ])('findAuthorizations fails as unavailable on %s', async (_case, body) => {
    next = body;
    for (const target of [liar, guardedLiar]) {
      await expect(target.findAuthorizations({ reference }, {})).rejects.toBeInstanceOf(
        ProcessorUnavailableError,
      );
    }
  });

  it('takes only authorization_not_found as a missing authorization; other 4xx are refusals', async () => {
    next = answer({ error: { type: 'invalid_request_error', code: 'resource_missing' } }, 404);
    await expect(liar.retrieve({ authorizationId: 'auth_1' }, {})).rejects.toBeInstanceOf(
      ProcessorRejectedError,
    );
    next = answer({ error: { type: 'invalid_request_error', code: 'parameter_invalid' } }, 400);
    await expect(liar.findAuthorizations({ reference }, {})).rejects.toThrow(
      new ProcessorRejectedError(
        'parameter_invalid',
        'The processor refused the call (parameter_invalid)',
      ),
    );
  });
});
