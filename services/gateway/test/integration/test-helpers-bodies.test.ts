import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createKey, createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// Hostile requests to the sandbox's test helpers (/v1/test/*), answered by the gateway itself:
// no service runs behind it, so a request that passes reaches the bus and answers 503, and
// one that does not never leaves the gateway.

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;
let commerce: { test: string; live: string };
let distributionTestKey: string;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db, {
    NATS_REQUEST_TIMEOUT_MS: '2000',
    RATE_LIMIT_WRITES_PER_MIN: '10000',
  });
  await gateway.start();
  const partner = await createPartner(db, { kind: 'commerce', name: 'Sandbox', mode: 'test' });
  commerce = { test: partner.apiKey, live: (await createKey(db, partner.partnerId)).apiKey };
  distributionTestKey = (
    await createPartner(db, { kind: 'distribution', name: 'Sandbox', mode: 'test' })
  ).apiKey;
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

interface Problem {
  errorCode: string;
  detail: string;
  errors?: { code: string; pointer: string | null; message: string }[];
}

/** POST `path` with `body` as it is (undefined: no body and no content type). */
async function post(path: string, body?: string, apiKey: string | null = commerce.test) {
  const headers: Record<string, string> = {};
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url()}${path}`, { method: 'POST', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    problem: JSON.parse(text) as Problem,
  };
}

const advancePath = (orderId: string = randomUUID()) => `/v1/test/orders/${orderId}/advance`;
const storeOrdersPath = (storeId: string = randomUUID()) => `/v1/test/stores/${storeId}/orders`;

/** The answer is a 400 REQUEST_INVALID with an error of `code` at `pointer`. */
function expectInvalidAt(answer: Awaited<ReturnType<typeof post>>, pointer: string, code: string) {
  expect(answer.status).toBe(400);
  expect(answer.type).toMatch(/^application\/problem\+json/);
  expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
  expect(answer.problem.errors).toContainEqual(expect.objectContaining({ pointer, code }));
}

/** The request passed every check of the gateway: nothing answers behind it. */
function expectPassedOn(answer: Awaited<ReturnType<typeof post>>) {
  expect(answer.status).toBe(503);
  expect(answer.problem.errorCode).toBe('SERVICE_UNAVAILABLE');
}

describe('POST /v1/test/orders/{orderId}/advance', () => {
  it.each([
    ['a status it does not know', { to: 'eaten' }, '/to', 'INVALID_VALUE'],
    ['pending, where no advance goes', { to: 'pending' }, '/to', 'INVALID_VALUE'],
    ['a number', { to: 5 }, '/to', 'INVALID_VALUE'],
    ['null', { to: null }, '/to', 'INVALID_VALUE'],
    ['no to', {}, '/to', 'INVALID_VALUE'],
    ['an extra field', { to: 'completed', force: true }, '', 'UNKNOWN_FIELD'],
  ])('refuses %s at its pointer', async (_name, body, pointer, code) => {
    expectInvalidAt(await post(advancePath(), JSON.stringify(body)), pointer, code);
  });

  it('refuses a body that is not an object, and no body at all', async () => {
    expectInvalidAt(await post(advancePath(), '["completed"]'), '', 'INVALID_TYPE');
    const none = await post(advancePath());
    expect(none.status).toBe(400);
    expect(none.problem.errorCode).toBe('REQUEST_INVALID');
  });

  it('refuses an order id that is not a GUID, naming the path parameter', async () => {
    const answer = await post(advancePath('order-1'), JSON.stringify({ to: 'completed' }));
    expect(answer.status).toBe(400);
    expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
    expect(answer.problem.errors).toEqual([
      expect.objectContaining({ pointer: null, message: expect.stringContaining("'orderId'") }),
    ]);
  });

  it.each(['confirmed', 'completed', 'cancelled', 'timeout'])(
    'passes to %s on to the ordering service, for both kinds of partner',
    async (to) => {
      expectPassedOn(await post(advancePath(), JSON.stringify({ to })));
      expectPassedOn(await post(advancePath(), JSON.stringify({ to }), distributionTestKey));
    },
  );
});

describe('POST /v1/test/stores/{storeId}/orders', () => {
  it.each([
    ['itemCount 0', { itemCount: 0 }, '/itemCount', 'OUT_OF_RANGE'],
    ['itemCount 11', { itemCount: 11 }, '/itemCount', 'OUT_OF_RANGE'],
    ['a fractional itemCount', { itemCount: 1.5 }, '/itemCount', 'INVALID_TYPE'],
    ['itemCount as a string', { itemCount: '2' }, '/itemCount', 'INVALID_TYPE'],
    ['a fulfillment type it does not know', { fulfillmentType: 'DRONE' }, '/fulfillmentType'],
    ['a payment type it does not know', { paymentType: 'CASH' }, '/paymentType'],
    ['an extra field', { itemCount: 1, items: [] }, '', 'UNKNOWN_FIELD'],
  ])('refuses %s at its pointer', async (_name, body, pointer, code = 'INVALID_VALUE') => {
    expectInvalidAt(await post(storeOrdersPath(), JSON.stringify(body)), pointer, code);
  });

  it('refuses null and an array as the body', async () => {
    expectInvalidAt(await post(storeOrdersPath(), 'null'), '', 'INVALID_TYPE');
    expectInvalidAt(await post(storeOrdersPath(), '[]'), '', 'INVALID_TYPE');
  });

  it('refuses a store id that is not a GUID, naming the path parameter', async () => {
    const answer = await post(storeOrdersPath(`${randomUUID()}x`), '{}');
    expect(answer.status).toBe(400);
    expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
    expect(answer.problem.errors).toEqual([
      expect.objectContaining({ pointer: null, message: expect.stringContaining("'storeId'") }),
    ]);
  });

  it('passes no body, {} and a full body on to the ordering service', async () => {
    expectPassedOn(await post(storeOrdersPath()));
    expectPassedOn(await post(storeOrdersPath(), '{}'));
    expectPassedOn(
      await post(
        storeOrdersPath(),
        JSON.stringify({
          fulfillmentType: 'DELIVERY_BY_MERCHANT',
          paymentType: 'CARD',
          itemCount: 10,
        }),
      ),
    );
  });
});

describe('POST /v1/test/reset', () => {
  it('takes no body, or ignores one, and answers the services’ failure', async () => {
    expectPassedOn(await post('/v1/test/reset'));
    expectPassedOn(await post('/v1/test/reset', '{}'));
    expectPassedOn(await post('/v1/test/reset', '{"everything": true}'));
  });
});

describe('every test helper', () => {
  const routes = [
    ['advance', advancePath, JSON.stringify({ to: 'completed' })],
    ['place at the own store', storeOrdersPath, '{}'],
    ['reset', () => '/v1/test/reset', undefined],
  ] as const;

  it.each(routes)('%s: a live key is 403 FORBIDDEN', async (_name, path, body) => {
    const answer = await post(path(), body, commerce.live);
    expect(answer.status).toBe(403);
    expect(answer.problem.errorCode).toBe('FORBIDDEN');
    expect(answer.problem.detail).toMatch(/test keys/);
  });

  it.each(routes)('%s: no key is 401 UNAUTHORIZED', async (_name, path, body) => {
    const answer = await post(path(), body, null);
    expect(answer.status).toBe(401);
    expect(answer.problem.errorCode).toBe('UNAUTHORIZED');
  });

  it.each(routes)('%s: JSON that does not parse is 400 REQUEST_INVALID', async (_name, path) => {
    const answer = await post(path(), '{"to": "completed"');
    expect(answer.status).toBe(400);
    expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
  });

  it.each(routes)('%s: a body over 1 MiB is 413 PAYLOAD_TOO_LARGE', async (_name, path) => {
    const oversized = JSON.stringify({ to: 'completed', padding: 'x'.repeat(1024 * 1024) });
    const answer = await post(path(), oversized);
    expect(answer.status).toBe(413);
    expect(answer.problem.errorCode).toBe('PAYLOAD_TOO_LARGE');
  });
});
