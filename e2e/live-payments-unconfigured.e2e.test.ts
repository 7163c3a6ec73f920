/**
 * A deployment with no live card processor configured, as a local or staging platform
 * (docs/guide/sandbox.md#payments): over HTTP, a live key's card operations are 503
 * LIVE_PAYMENTS_NOT_CONFIGURED and never reach the simulator, which is there as the sandbox
 * processor; a test key's card order is charged on it as in every deployment.
 */
import { createPlatformClient, placeOrder } from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { insertLiveCard } from '@pcp/testing/live-card';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';

const CARD = {
  cardNumber: '4242424242424242',
  expMonth: 12,
  expYear: 2035,
  cvc: '123',
  cardholderName: 'Pat Doe',
};

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000' },
    // The platform's simulator stays the sandbox processor; there is no live one.
    paymentsEnv: { PAYMENT_PROCESSOR_URL: undefined },
  });
  host = await startCatalogHost();
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

/** A commerce partner's store selling sodas and a distribution partner taking cards, of `mode`. */
async function partnersOf(mode: 'live' | 'test') {
  const commerce = await platform.newPartner('commerce', { mode });
  const market = await platform.newPartner('distribution', { paymentTypes: ['CARD'], mode });
  const store = await storeWithSodas(
    createPlatformClient({ baseUrl: platform.baseUrl, apiKey: commerce.apiKey }),
    host,
    { orderSubmissionUrl: undefined },
  );
  return { market, store };
}

function expectNotConfigured(answer: HttpResult) {
  expect(answer.status, answer.text).toBe(503);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({ status: 503, errorCode: 'LIVE_PAYMENTS_NOT_CONFIGURED' });
}

describe('a deployment without a live card processor', () => {
  it('answers a live key’s card vaulting and card order 503, never asking the simulator', async () => {
    const { market, store } = await partnersOf('live');
    const charges = platform.processor.charges().length;
    const endUser = `buyer-${randomUUID()}`;
    expectNotConfigured(
      await call(platform.baseUrl, 'POST', '/v1/marketfront/payments/cards', {
        apiKey: market.apiKey,
        headers: { 'X-End-User-Id': endUser },
        body: CARD,
      }),
    );

    // A live card vaulted while a live processor was configured: its order is refused too.
    const paymentId = await insertLiveCard(platform.paymentsDb, {
      partnerId: market.partnerId,
      endUserId: endUser,
    });
    expectNotConfigured(
      await call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
        apiKey: market.apiKey,
        headers: { 'X-End-User-Id': endUser, 'Idempotency-Key': randomUUID() },
        body: sodaOrder(store.ids, store.storeId, paymentId),
      }),
    );
    const charged = await platform.paymentsDb
      .selectFrom('charges')
      .select('charge_id')
      .where('partner_id', '=', market.partnerId)
      .execute();
    expect(charged).toEqual([]);
    expect(platform.processor.charges()).toHaveLength(charges);
  });

  it('charges a test key’s card order on the simulator', async () => {
    const { market, store } = await partnersOf('test');
    const client = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: market.apiKey,
    });
    const buyer = await newBuyer(client, CARD.cardNumber);
    const { order } = await placeOrder(client, {
      body: sodaOrder(store.ids, store.storeId, buyer.paymentId),
      endUserId: buyer.endUser,
    });
    const { charge_id: chargeId } = await platform.orderingDb
      .selectFrom('orders')
      .select('charge_id')
      .where('order_id', '=', order.orderId)
      .executeTakeFirstOrThrow();
    expect(platform.processor.charges().filter((c) => c.reference === chargeId)).toMatchObject([
      { capturedAmount: 2_364 },
    ]);
  });
});
