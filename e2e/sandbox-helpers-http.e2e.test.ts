/**
 * The sandbox's test helpers over HTTP (docs/guide/sandbox.md#test-helpers): a commerce partner's
 * test key places test orders at its own test store, moves them as the store would (or lets the
 * acceptance window pass), then deletes all of its test data; its live key may do none of it.
 */
import { createPlatformClient } from '@pcp/client';
import { createKey, createPartner } from '@pcp/gateway/admin';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { storeWithSodas } from './orders.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let testKey: string;
let liveKey: string;
let storeId: string;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000' },
  });
  host = await startCatalogHost();
  const partner = await createPartner(platform.gatewayDb, {
    kind: 'commerce',
    name: 'Sandbox kitchen',
    mode: 'test',
  });
  testKey = partner.apiKey;
  liveKey = (await createKey(platform.gatewayDb, partner.partnerId, { mode: 'live' })).apiKey;
  const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: testKey });
  ({ storeId } = await storeWithSodas(client, host, { minimumOrder: 0, orderSubmissionUrl: null }));
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const post = (path: string, body?: unknown, apiKey = testKey) =>
  call(platform.baseUrl, 'POST', path, { apiKey, ...(body === undefined ? {} : { body }) });

describe('placing at a store with a minimum order', () => {
  // Another partner's stores: the reset below counts the first partner's rows.
  let key: string;
  beforeAll(async () => {
    key = (
      await createPartner(platform.gatewayDb, { kind: 'commerce', name: 'Minimums', mode: 'test' })
    ).apiKey;
  });
  const storeOf = (profile: Record<string, unknown>) =>
    storeWithSodas(createPlatformClient({ baseUrl: platform.baseUrl, apiKey: key }), host, {
      orderSubmissionUrl: null,
      ...profile,
    });

  it('places an order whose subtotal meets it: 5.00 takes three sodas of 1.99', async () => {
    // storeWithSodas' own minimum; profile money is in major units of the currency.
    const { storeId, ids } = await storeOf({ minimumOrder: 5 });
    const placed = await post(`/v1/test/stores/${storeId}/orders`, {}, key);
    expect(placed.status).toBe(201);
    expect(placed.body.amounts.subTotal).toBeGreaterThanOrEqual(5);
    expect(placed.body.cart.lineItems).toEqual([
      expect.objectContaining({ itemId: ids.soda, quantity: 3, totalPrice: 5.97 }),
    ]);
  });

  it('answers a ProblemDetail naming the setting when no order within the cart limits meets it', async () => {
    const { storeId } = await storeOf({ minimumOrder: 5000 });
    const refused = await post(`/v1/test/stores/${storeId}/orders`, {}, key);
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({
      errorCode: 'ORDER_INVALID',
      detail: expect.stringMatching(/minimumOrder of 5000 USD.*at most 1988\.01 USD/),
      errors: [
        {
          code: 'MINIMUM_NOT_MET',
          pointer: '/cart',
          message: expect.stringMatching(/minimumOrder/),
        },
      ],
    });
  });
});

describe('the test helpers over HTTP', () => {
  it('places a test order at the own store and advances it to completed', async () => {
    const placed = await post(`/v1/test/stores/${storeId}/orders`);
    expect(placed.status).toBe(201);
    expect(placed.body).toMatchObject({ storeId, state: 'open', status: 'pending' });

    const advanced = await post(`/v1/test/orders/${placed.body.orderId}/advance`, {
      to: 'completed',
    });
    expect(advanced.status).toBe(200);
    expect(advanced.body).toMatchObject({
      orderId: placed.body.orderId,
      state: 'completed',
      status: 'completed',
    });
    // pending → confirmed → preparing → ready → completed, one version each.
    expect(advanced.body.version).toBe(placed.body.version + 4);

    const listed = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}/orders`, {
      apiKey: testKey,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.orders).toContainEqual(
      expect.objectContaining({ orderId: placed.body.orderId, state: 'completed' }),
    );

    const again = await post(`/v1/test/orders/${placed.body.orderId}/advance`, { to: 'confirmed' });
    expect(again.status).toBe(409);
    expect(again.body.errorCode).toBe('ORDER_STATUS_TRANSITION_INVALID');
  });

  it('lets the acceptance window of a second order pass: the platform cancels it', async () => {
    const placed = await post(`/v1/test/stores/${storeId}/orders`, { itemCount: 1 });
    expect(placed.status).toBe(201);
    const timedOut = await post(`/v1/test/orders/${placed.body.orderId}/advance`, {
      to: 'timeout',
    });
    expect(timedOut.status).toBe(200);
    expect(timedOut.body).toMatchObject({
      orderId: placed.body.orderId,
      state: 'cancelled',
      cancelledBy: 'platform',
    });
  });

  it('refuses the live key of the same partner on every helper', async () => {
    for (const [path, body] of [
      [`/v1/test/stores/${storeId}/orders`, {}],
      [`/v1/test/orders/${storeId}/advance`, { to: 'completed' }],
      ['/v1/test/reset', undefined],
    ] as const) {
      const answer = await post(path, body, liveKey);
      expect(answer.status, path).toBe(403);
      expect(answer.body.errorCode, path).toBe('FORBIDDEN');
    }
  });

  it('resets the test data: counts by table, then the store is gone', async () => {
    const reset = await post('/v1/test/reset');
    expect(reset.status).toBe(200);
    expect(reset.body.deleted).toMatchObject({
      'stores.stores': 1,
      'catalog.ingest_runs': 1,
      'ordering.orders': 2,
    });
    const store = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}`, {
      apiKey: testKey,
    });
    expect(store.status).toBe(404);
    expect(store.body.errorCode).toBe('STORE_NOT_FOUND');

    const again = await post('/v1/test/reset', {});
    expect(again.status).toBe(200);
    expect(Object.values(again.body.deleted as Record<string, number>).every((n) => n === 0)).toBe(
      true,
    );
  });
});
