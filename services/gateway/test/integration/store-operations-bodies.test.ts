import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createPartner } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// Hostile bodies of the store-operation changes to existing routes (busy status, a deny with
// unavailableItemIds), answered by the gateway itself: no service runs behind it, so a body
// that passes reaches the bus and answers 503, and one that does not never leaves the gateway.

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;
let commerce: { apiKey: string };
let distribution: { apiKey: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db, {
    NATS_REQUEST_TIMEOUT_MS: '2000',
    RATE_LIMIT_WRITES_PER_MIN: '10000',
  });
  await gateway.start();
  commerce = await createPartner(db, { kind: 'commerce', name: 'Store operations' });
  distribution = await createPartner(db, { kind: 'distribution', name: 'Carts' });
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

interface Problem {
  errorCode: string;
  errors?: { code: string; pointer: string | null }[];
  errorsOmitted?: number;
}

async function post(
  path: string,
  body: string,
  contentType = 'application/json',
  apiKey = commerce.apiKey,
) {
  const response = await fetch(`${gateway.url()}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': contentType },
    body,
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    text,
    problem: JSON.parse(text) as Problem,
  };
}

const storeStatusPath = () => `/v1/commerce/stores/${randomUUID()}/status`;
const orderStatusPath = () => `/v1/commerce/orders/${randomUUID()}/status`;
const ids = (count: number) => Array.from({ length: count }, () => randomUUID());

/** The answer is a 400 REQUEST_INVALID with an error of `code` at `pointer`. */
function expectInvalidAt(
  answer: Awaited<ReturnType<typeof post>>,
  pointer: string,
  code?: string,
): void {
  expect(answer.status).toBe(400);
  expect(answer.type).toMatch(/^application\/problem\+json/);
  expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
  expect(answer.problem.errors).toContainEqual(
    expect.objectContaining({ pointer, ...(code ? { code } : {}) }),
  );
}

describe('POST /v1/commerce/stores/{storeId}/status: busy', () => {
  it.each([
    ['0 minutes', 0, 'OUT_OF_RANGE'],
    ['4 minutes', 4, 'OUT_OF_RANGE'],
    ['121 minutes', 121, 'OUT_OF_RANGE'],
    ['1,000 minutes', 1_000, 'OUT_OF_RANGE'],
    ['-5 minutes', -5, 'OUT_OF_RANGE'],
    ['a fraction', 7.5, 'INVALID_TYPE'],
    ['a string', '20', 'INVALID_TYPE'],
    ['null', null, 'INVALID_TYPE'],
  ])('refuses extraPrepMinutes of %s at its pointer', async (_name, minutes, code) => {
    const answer = await post(
      storeStatusPath(),
      JSON.stringify({ status: 'busy', extraPrepMinutes: minutes }),
    );
    expectInvalidAt(answer, '/extraPrepMinutes', code);
  });

  it('refuses busy without extraPrepMinutes, and a resumeAt that is not a date-time', async () => {
    expectInvalidAt(
      await post(storeStatusPath(), JSON.stringify({ status: 'busy' })),
      '/extraPrepMinutes',
      'REQUIRED',
    );
    expectInvalidAt(
      await post(
        storeStatusPath(),
        JSON.stringify({ status: 'busy', extraPrepMinutes: 20, resumeAt: 'in an hour' }),
      ),
      '/resumeAt',
    );
  });

  it('refuses a status it does not know', async () => {
    expectInvalidAt(
      await post(storeStatusPath(), JSON.stringify({ status: 'slow', extraPrepMinutes: 20 })),
      '/status',
    );
  });

  it.each([5, 120])('passes busy with %i minutes on to the stores service', async (minutes) => {
    const answer = await post(
      storeStatusPath(),
      JSON.stringify({ status: 'busy', extraPrepMinutes: minutes, resumeAt: null }),
    );
    // Nothing answers behind this gateway: a 503 shows the body passed its checks.
    expect(answer.status).toBe(503);
    expect(answer.problem.errorCode).toBe('SERVICE_UNAVAILABLE');
  });
});

describe('POST /v1/commerce/orders/{orderId}/status: a deny with unavailableItemIds', () => {
  const deny = (unavailableItemIds: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      state: 'cancelled',
      cancelReason: 'Out of fries',
      unavailableItemIds,
      ...extra,
    });

  it('refuses 101 items, and none', async () => {
    expectInvalidAt(
      await post(orderStatusPath(), deny(ids(101))),
      '/unavailableItemIds',
      'OUT_OF_RANGE',
    );
    expectInvalidAt(await post(orderStatusPath(), deny([])), '/unavailableItemIds', 'OUT_OF_RANGE');
  });

  it('refuses an id that is not a GUID at its index', async () => {
    const answer = await post(orderStatusPath(), deny([randomUUID(), 'fries', 42]));
    expectInvalidAt(answer, '/unavailableItemIds/1');
    expectInvalidAt(answer, '/unavailableItemIds/2');
    expect(answer.problem.errors).toHaveLength(2);
  });

  it('refuses unavailableItemIds on any move but a cancel', async () => {
    for (const move of [{ status: 'confirmed' }, { state: 'completed' }]) {
      const answer = await post(
        orderStatusPath(),
        JSON.stringify({ ...move, unavailableItemIds: ids(1) }),
      );
      expectInvalidAt(answer, '/unavailableItemIds', 'INVALID_VALUE');
    }
  });

  it('bounds the errors of 5,000 malformed ids and echoes none of them back', async () => {
    const hostile = Array.from(
      { length: 5_000 },
      (_, index) => `not-an-id-${index}-${'x'.repeat(40)}`,
    );
    const answer = await post(orderStatusPath(), deny(hostile));
    expect(answer.status).toBe(400);
    expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
    expect(answer.problem.errors!.length).toBeGreaterThan(0);
    expect(answer.problem.errors!.length).toBeLessThanOrEqual(100);
    expect(answer.text.length).toBeLessThan(32_000);
    expect(answer.text).not.toContain('not-an-id-4999');
  });

  it('passes 100 items on a cancel to the ordering service', async () => {
    const answer = await post(orderStatusPath(), deny(ids(100)));
    expect(answer.status).toBe(503);
    expect(answer.problem.errorCode).toBe('SERVICE_UNAVAILABLE');
  });
});

describe('bodies refused before their schema', () => {
  const routes = [
    ['the store status', storeStatusPath],
    ['the order status', orderStatusPath],
  ] as const;

  it.each(routes)('%s: a body over 1 MiB is 413 PAYLOAD_TOO_LARGE', async (_name, path) => {
    const oversized = JSON.stringify({
      state: 'cancelled',
      cancelReason: 'x',
      status: 'busy',
      extraPrepMinutes: 20,
      unavailableItemIds: ids(30_000),
    });
    expect(oversized.length).toBeGreaterThan(1024 * 1024);
    const answer = await post(path(), oversized);
    expect(answer.status).toBe(413);
    expect(answer.problem.errorCode).toBe('PAYLOAD_TOO_LARGE');
  });

  it.each(routes)('%s: JSON that does not parse is 400 REQUEST_INVALID', async (_name, path) => {
    const answer = await post(path(), '{"status": "busy", "extraPrepMinutes": 20');
    expect(answer.status).toBe(400);
    expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
  });

  it.each(routes)('%s: a __proto__ key is 400 REQUEST_INVALID', async (_name, path) => {
    const answer = await post(
      path(),
      '{"status": "busy", "extraPrepMinutes": 20, "__proto__": {"polluted": true}}',
    );
    expect(answer.status).toBe(400);
    expect(answer.problem.errorCode).toBe('REQUEST_INVALID');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(routes)('%s: a text/plain body is 415', async (_name, path) => {
    const answer = await post(path(), 'status=busy&extraPrepMinutes=20', 'text/plain');
    expect(answer.status).toBe(415);
    expect(answer.problem.errorCode).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('a route whose body goes to its service unparsed (carts) answers text/plain 415 too', async () => {
    const answer = await post(
      '/v1/marketfront/carts/add',
      'cart=null',
      'text/plain',
      distribution.apiKey,
    );
    expect(answer.status).toBe(415);
    expect(answer.problem.errorCode).toBe('UNSUPPORTED_MEDIA_TYPE');
  });
});
