import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  orderErrorCode,
  orderErrorCodes,
  placeOrder,
  PlatformProblem,
  type PlaceOrderRequest,
} from '../src/index.js';
import { retryAfterMs } from '../src/waiting.js';
import {
  problem,
  startScriptedServer,
  type ScriptedAnswer,
  type ScriptedServer,
} from './scripted-server.js';

/**
 * placeOrder against a scripted stand-in of the platform on loopback: which answers it
 * retries, with which key, after how long, and which it throws.
 */

const body: PlaceOrderRequest = {
  cart: {
    catalogSetId: randomUUID(),
    storeId: randomUUID(),
    lineItems: [{ itemId: randomUUID(), lineItemId: randomUUID(), quantity: 2 }],
  },
  fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
  client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
  paymentType: 'PAY_AT_STORE',
  amounts: { total: 4.5 },
};
const order = { orderId: randomUUID(), state: 'open', status: 'pending' };
const placed: ScriptedAnswer = { status: 201, body: order };

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function scripted(script: Parameters<typeof startScriptedServer>[0]) {
  server = await startScriptedServer(script);
  return {
    server,
    client: createPlatformClient({
      baseUrl: server.baseUrl,
      apiKey: 'pk_test',
      userAgent: 'shop/1.0',
    }),
  };
}

const gaps = (server: ScriptedServer) =>
  server.requests.slice(1).map((request, i) => request.at - server.requests[i]!.at);

describe('placeOrder', () => {
  it('sends the order with the key, the end user and the API key, and returns the order', async () => {
    const { server, client } = await scripted([placed]);
    const result = await placeOrder(client, {
      body,
      endUserId: 'diner-7',
      idempotencyKey: 'key-1',
    });
    expect(result).toEqual({ order, replayed: false, attempts: 1, idempotencyKey: 'key-1' });
    const [request] = server.requests;
    expect(request).toMatchObject({ method: 'POST', url: '/v1/marketfront/orders/place' });
    expect(request!.headers).toMatchObject({
      'idempotency-key': 'key-1',
      'x-end-user-id': 'diner-7',
      authorization: 'Bearer pk_test',
      'user-agent': 'shop/1.0',
    });
    expect(JSON.parse(request!.body)).toEqual(body);
  });

  it('retries a network error, a 503 and a 409 in progress with the same generated key', async () => {
    const { server, client } = await scripted([
      'drop',
      { status: 503, body: problem(503, 'PAYMENT_PROCESSOR_UNAVAILABLE', true) },
      {
        status: 409,
        headers: { 'retry-after': '0' },
        body: problem(409, 'IDEMPOTENCY_KEY_IN_PROGRESS', true),
      },
      { ...placed, headers: { 'idempotent-replayed': 'true' } },
    ]);
    const result = await placeOrder(client, { body, endUserId: 'diner-7' });
    expect(result).toMatchObject({ order, replayed: true, attempts: 4 });
    expect(result.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    const keys = server.requests.map((request) => request.headers['idempotency-key']);
    expect(keys).toEqual(Array(4).fill(result.idempotencyKey));
    // The same body each time: a different one would be a conflict under the key.
    expect(new Set(server.requests.map((request) => request.body)).size).toBe(1);
  });

  it('retries a 429 and an answer without a ProblemDetail (a proxy’s 502)', async () => {
    const { server, client } = await scripted([
      { status: 429, headers: { 'retry-after': '0' }, body: problem(429, 'RATE_LIMITED', true) },
      { status: 502 },
      placed,
    ]);
    const result = await placeOrder(client, { body, endUserId: 'diner-7' });
    expect(result.attempts).toBe(3);
    expect(server.requests).toHaveLength(3);
  });

  it('stops at maxAttempts and throws the last answer', async () => {
    const { server, client } = await scripted([
      {
        status: 503,
        headers: { 'retry-after': '0' },
        body: problem(503, 'SERVICE_UNAVAILABLE', true),
      },
    ]);
    const error = await placeOrder(client, { body, endUserId: 'diner-7', maxAttempts: 3 }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PlatformProblem);
    expect(error).toMatchObject({ status: 503, errorCode: 'SERVICE_UNAVAILABLE', retryable: true });
    expect(server.requests).toHaveLength(3);
  });

  it('throws the network error when the last try got no answer', async () => {
    const { server, client } = await scripted(['drop']);
    const error = await placeOrder(client, { body, endUserId: 'diner-7', maxAttempts: 2 }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(PlatformProblem);
    expect(server.requests).toHaveLength(2);
  });

  it('throws a final 4xx at once, with its ProblemDetail, without retrying', async () => {
    const declined = {
      ...problem(400, 'PAYMENT_DECLINED'),
      errors: [{ code: 'INSUFFICIENT_FUNDS', message: 'Declined', pointer: '/paymentId' }],
    };
    for (const answer of [
      { status: 400, body: declined },
      { status: 422, body: problem(422, 'IDEMPOTENCY_KEY_CONFLICT') },
      { status: 409, body: problem(409, 'ORDER_STATUS_TRANSITION_INVALID') },
      { status: 404 },
    ]) {
      const { server, client } = await scripted([answer]);
      const error = await placeOrder(client, { body, endUserId: 'diner-7' }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(PlatformProblem);
      expect((error as PlatformProblem).status).toBe(answer.status);
      expect(server.requests).toHaveLength(1);
      await server.close();
    }
    const { client } = await scripted([{ status: 400, body: declined }]);
    const error = (await placeOrder(client, { body, endUserId: 'diner-7' }).catch(
      (caught: unknown) => caught,
    )) as PlatformProblem;
    expect(error.errorCode).toBe('PAYMENT_DECLINED');
    expect(error.retryable).toBe(false);
    expect(error.problem.errors).toEqual(declined.errors);
    expect(error.message).toBe('400 PAYMENT_DECLINED: PAYMENT_DECLINED happened');
    // An answer that is not a ProblemDetail still says what happened.
    const { client: bare } = await scripted([{ status: 404 }]);
    await expect(placeOrder(bare, { body, endUserId: 'diner-7' })).rejects.toMatchObject({
      status: 404,
      errorCode: 'UNEXPECTED_RESPONSE',
      retryable: false,
      problem: { instance: '/v1/marketfront/orders/place' },
    });
  });

  it('waits the Retry-After seconds and HTTP-dates it is given', async () => {
    const { server, client } = await scripted((_request, index) => {
      if (index === 0) {
        const inProgress = problem(409, 'IDEMPOTENCY_KEY_IN_PROGRESS', true);
        return { status: 409, headers: { 'retry-after': '1' }, body: inProgress };
      }
      if (index > 1) return placed;
      // An HTTP-date has whole seconds: "in two seconds" is one to two seconds from now.
      const at = new Date(Date.now() + 2_000).toUTCString();
      return { status: 503, headers: { 'retry-after': at }, body: problem(503, 'INTERNAL', true) };
    });
    await placeOrder(client, { body, endUserId: 'diner-7' });
    const [first, second] = gaps(server);
    expect(first).toBeGreaterThanOrEqual(950);
    expect(first).toBeLessThan(1_500);
    expect(second).toBeGreaterThanOrEqual(950);
    expect(second).toBeLessThan(2_500);
  });

  it('caps every wait at maxDelayMs, however long Retry-After asks', async () => {
    const { server, client } = await scripted([
      {
        status: 503,
        headers: { 'retry-after': '3600' },
        body: problem(503, 'SERVICE_UNAVAILABLE', true),
      },
      placed,
    ]);
    await placeOrder(client, { body, endUserId: 'diner-7', maxDelayMs: 200 });
    const [gap] = gaps(server);
    expect(gap).toBeGreaterThanOrEqual(180);
    expect(gap).toBeLessThan(1_000);
  });

  it('stops waiting and throws when the signal aborts', async () => {
    const { server, client } = await scripted([
      {
        status: 503,
        headers: { 'retry-after': '30' },
        body: problem(503, 'SERVICE_UNAVAILABLE', true),
      },
    ]);
    const started = Date.now();
    const error = await placeOrder(client, {
      body,
      endUserId: 'diner-7',
      signal: AbortSignal.timeout(200),
    }).catch((caught: unknown) => caught);
    expect((error as Error).name).toBe('TimeoutError');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);

    const aborted = new AbortController();
    aborted.abort();
    await expect(
      placeOrder(client, { body, endUserId: 'diner-7', signal: aborted.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.requests).toHaveLength(1);
  });
});

describe('retryAfterMs', () => {
  const headers = (value: string) => new Headers({ 'retry-after': value });
  const now = Date.parse('2026-03-01T10:00:00Z');

  it('reads whole seconds and HTTP-dates; a past date is no wait', () => {
    expect(retryAfterMs(headers('7'), now)).toBe(7_000);
    expect(retryAfterMs(headers('0'), now)).toBe(0);
    expect(retryAfterMs(headers('Sun, 01 Mar 2026 10:00:30 GMT'), now)).toBe(30_000);
    expect(retryAfterMs(headers('Sun, 01 Mar 2026 09:00:00 GMT'), now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    expect(retryAfterMs(new Headers(), now)).toBeUndefined();
    for (const value of ['-1', '1.5', 'soon', '1e3', ' ']) {
      expect(retryAfterMs(headers(value), now), value).toBeUndefined();
    }
  });
});

describe('orderErrorCode', () => {
  it('keeps every code of the spec', () => {
    const spec = [
      'ITEM_UNAVAILABLE',
      'PAYMENT_FAILED',
      'STORE_CLOSED',
      'DELIVERY_UNAVAILABLE',
      'OUTSIDE_AVAILABILITY_WINDOW',
      'MINIMUM_NOT_MET',
      'MODIFIER_REQUIRED',
      'ORDER_TOTAL_DIFFERENT',
      'OTHER',
      'INSUFFICIENT_FUNDS',
      'INCORRECT_CVC',
      'CARD_EXPIRED',
      'CARD_LOST_OR_STOLEN',
      'PROCESSING_ERROR',
    ];
    expect(orderErrorCodes).toEqual(expect.arrayContaining(spec));
    for (const code of orderErrorCodes) expect(orderErrorCode(code)).toBe(code);
  });

  it('routes unknown codes to OTHER instead of failing', () => {
    for (const code of [
      'CARD_VELOCITY_EXCEEDED',
      '',
      'item_unavailable',
      '__proto__',
      'toString',
    ]) {
      expect(orderErrorCode(code), code).toBe('OTHER');
    }
  });
});
