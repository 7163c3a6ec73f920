/**
 * A store whose profile changes currency while its active CatalogSet keeps the old one: no
 * path may read the profile's fee or minimums in the catalog's currency (USD 300 for ¥300) or
 * turn one it cannot convert into 0 (a free delivery for USD 2.50 in yen). Validate and place
 * refuse the order with CURRENCY_MISMATCH until a CatalogSet in the profile's currency is
 * active; discovery shows the profile's amounts in the profile's currency.
 */
import {
  createPlatformClient,
  ingestCatalog,
  type operations,
  type PlatformClient,
} from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer } from './orders.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: PlatformClient;
let distribution: { apiKey: string };
let market: PlatformClient;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
  });
  host = await startCatalogHost();
  const clientOf = (partner: { apiKey: string }) =>
    createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
  commerce = clientOf(await platform.newPartner('commerce'));
  distribution = await platform.newPartner('distribution', {
    paymentTypes: ['CARD', 'PAY_AT_STORE'],
  });
  market = clientOf(distribution);
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

type Catalog = ReturnType<typeof cartTestCatalog>;
type OrderRequest = operations['validateOrder']['requestBody']['content']['application/json'];

/** USD: pickup minimum 5, delivery 2.99 from 15. */
const dollars = {
  currency: 'USD',
  minimumOrder: 5,
  delivery: { radiusMeters: 5000, fee: 2.99, minimumOrder: 15, etaMinutes: 40 },
};
/** JPY: pickup minimum 500, delivery 300 from 1,500. */
const yen = {
  currency: 'JPY',
  minimumOrder: 500,
  delivery: { radiusMeters: 5000, fee: 300, minimumOrder: 1500, etaMinutes: 40 },
};

/** The cart test catalog in yen: every price times 100 (a soda is ¥199). */
function inYen(catalog: Catalog): Catalog {
  const items = Object.fromEntries(
    Object.entries(catalog.document.items).map(([id, item]) => [
      id,
      { ...item, basePrice: Math.round(item.basePrice * 100) },
    ]),
  );
  return { ...catalog, document: { ...catalog.document, currency: 'JPY', items } };
}

async function putProfile(storeId: string, money: typeof dollars, name: string) {
  const put = await commerce.PUT('/v1/commerce/stores/{storeId}', {
    params: { path: { storeId } },
    body: storeProfile({ name, availability: alwaysOpen, orderSubmissionUrl: undefined, ...money }),
  });
  expect(put.response.status, JSON.stringify(put.error)).toBeLessThan(300);
}

async function ingest(storeId: string, catalog: Catalog) {
  const run = await ingestCatalog(commerce, {
    storeId,
    callbackUrl: host.serveJson(`/${randomUUID()}.json`, catalog.document),
    timeoutMs: 30_000,
  });
  expect(run.errors).toEqual([]);
  expect(run.status).toBe('succeeded');
}

/** A store of `money` selling the cart test catalog in its currency: its id, name and ids. */
async function storeIn(money: typeof dollars) {
  const storeId = randomUUID();
  const name = `Currency ${randomUUID()}`;
  await putProfile(storeId, money, name);
  const usd = cartTestCatalog(storeId);
  const catalog = money.currency === 'JPY' ? inYen(usd) : usd;
  await ingest(storeId, catalog);
  return { storeId, name, ids: catalog.ids };
}

const nearby = { address1: '100 S Wacker Dr', city: 'Chicago', state: 'IL', postalCode: '60606' };

/** Ten sodas delivered nearby as soon as possible, paid at the store. */
const deliveryOrder = (
  storeId: string,
  ids: Catalog['ids'],
  overrides: Partial<OrderRequest> = {},
): OrderRequest => ({
  cart: {
    catalogSetId: ids.catalogSetId,
    storeId,
    lineItems: [{ itemId: ids.soda, lineItemId: randomUUID(), quantity: 10 }],
  },
  fulfillment: {
    mode: 'DELIVERY_BY_MERCHANT',
    scheduleType: 'ASAP',
    address: nearby,
    deliveryType: 'DOOR_TO_DOOR',
  },
  client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
  paymentType: 'PAY_AT_STORE',
  ...overrides,
});

async function validate(body: OrderRequest, endUser = 'shopper-1') {
  const { data, error } = await market.POST('/v1/marketfront/orders/validate', {
    body,
    headers: { 'x-end-user-id': endUser },
  });
  if (!data) throw new Error(`validate answered ${JSON.stringify(error)}`);
  return data;
}

/**
 * Validate reads a cached profile that hears of a change within seconds: poll until it agrees
 * with `expected`.
 */
const validateUntil = (body: OrderRequest, expected: Record<string, unknown>, endUser?: string) =>
  expect
    .poll(() => validate(body, endUser), { timeout: 10_000, interval: 200 })
    .toMatchObject(expected);

const mismatch = (profile: string, catalog: string) => ({
  isValid: false,
  amounts: null,
  errors: [
    {
      code: 'CURRENCY_MISMATCH',
      message: expect.stringContaining(`${profile}`) as unknown,
      pointer: '/cart/catalogSetId',
    },
  ],
  cart: { currency: catalog },
});

describe('a profile whose currency is not its catalog’s', () => {
  it('USD store and catalog, profile PUT as JPY with fee 300: no delivery for USD 300', async () => {
    const { storeId, name, ids } = await storeIn(dollars);
    const order = deliveryOrder(storeId, ids);
    await validateUntil(order, {
      isValid: true,
      amounts: { currency: 'USD', fees: 2.99, total: 24.63 },
    });

    await putProfile(storeId, yen, name);
    await validateUntil(order, mismatch('JPY', 'USD'));
    const [error] = (await validate(order)).errors;
    expect(error?.message).toContain('USD');
    // Pickup too: its minimum is the profile's, in yen now.
    expect(
      await validate({ ...order, fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' } }),
    ).toMatchObject(mismatch('JPY', 'USD'));
  });

  it('JPY store, profile switched to USD with fee 2.50: not free; a USD catalog prices it at 2.50', async () => {
    const { storeId, name, ids } = await storeIn(yen);
    const order = deliveryOrder(storeId, ids);
    await validateUntil(order, { isValid: true, amounts: { currency: 'JPY', fees: 300 } });

    await putProfile(storeId, { ...dollars, delivery: { ...dollars.delivery, fee: 2.5 } }, name);
    await validateUntil(order, mismatch('USD', 'JPY'));

    // The way to change currency: the profile first, then a CatalogSet in the new currency.
    const usd = cartTestCatalog(storeId);
    await ingest(storeId, usd);
    await validateUntil(deliveryOrder(storeId, usd.ids), {
      isValid: true,
      errors: [],
      amounts: {
        currency: 'USD',
        subTotal: 19.9,
        fees: 2.5,
        feesBreakdown: [{ type: 'DELIVERY', amount: 2.5 }],
      },
    });
  });

  it('place refuses the order (ORDER_INVALID, CURRENCY_MISMATCH) and charges nothing', async () => {
    const { storeId, name, ids } = await storeIn(dollars);
    const { endUser, paymentId } = await newBuyer(market, '4242424242424242');
    // What the customer saw before the change: 19.90 + 2.99 delivery + 1.74 tax.
    const order = {
      ...deliveryOrder(storeId, ids, { paymentType: 'CARD', paymentId }),
      amounts: { total: 24.63 },
    };
    await validateUntil(order, { isValid: true, amounts: { total: 24.63 } }, endUser);
    await putProfile(storeId, yen, name);

    const charges = platform.processor.charges().length;
    const placed = await market.POST('/v1/marketfront/orders/place', {
      params: { header: { 'Idempotency-Key': randomUUID(), 'X-End-User-Id': endUser } },
      body: order,
    });
    expect(placed.response.status).toBe(400);
    expect(placed.error).toMatchObject({
      errorCode: 'ORDER_INVALID',
      errors: [{ code: 'CURRENCY_MISMATCH', pointer: '/cart/catalogSetId' }],
    });
    expect(platform.processor.charges()).toHaveLength(charges);
  });

  it("discovery and lookup show the profile's fee in the profile's currency, never 0", async () => {
    const { storeId, name } = await storeIn(yen);
    await putProfile(storeId, { ...dollars, delivery: { ...dollars.delivery, fee: 2.5 } }, name);
    const expected = {
      storeId,
      currency: 'USD',
      minimumOrder: 5,
      delivery: { fee: 2.5, minimumOrder: 15 },
    };
    const found = await call(platform.baseUrl, 'POST', '/v1/marketfront/stores/discover', {
      apiKey: distribution.apiKey,
      body: {
        location: { ...nearby, country: 'US' },
        fulfillmentType: 'DELIVERY_BY_MERCHANT',
        query: name,
      },
    });
    expect(found.status, found.text).toBe(200);
    expect(found.body.stores).toMatchObject([expected]);
    const lookup = await market.GET('/v1/marketfront/stores/{storeId}', {
      params: { path: { storeId } },
    });
    expect(lookup.data).toMatchObject(expected);
  });
});
