import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '../test-support/cart-catalog.js';
import { createTestEnvironment, type TestEnvironment } from '../test-support/environment.js';
import { storeProfile } from '../test-support/fixtures.js';
import { startPlatform, type TestPlatform } from '../test-support/platform.js';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };
let storeId: string;
let ids: ReturnType<typeof cartTestCatalog>['ids'];

async function ingest(document: unknown) {
  const accepted = await call(
    platform.baseUrl,
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    {
      apiKey: commerce.apiKey,
      body: { callbackUrl: host.serveJson(`/${randomUUID()}.json`, document) },
    },
  );
  // Plain polling: this also runs in beforeAll, where expect.poll is not available.
  for (let attempt = 0; attempt < 300; attempt++) {
    const status = await call(platform.baseUrl, 'GET', accepted.body.statusUrl, {
      apiKey: commerce.apiKey,
    });
    if (status.body.status === 'succeeded') return;
    if (status.body.status === 'failed') throw new Error(JSON.stringify(status.body.errors));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('ingest did not finish');
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  host = await startCatalogHost();
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
  storeId = randomUUID();
  await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile(),
  });
  const catalog = cartTestCatalog(storeId);
  ids = catalog.ids;
  await ingest(catalog.document);
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const cartCall = (operation: string, body: unknown) =>
  call(platform.baseUrl, 'POST', `/v1/marketfront/carts/${operation}`, {
    apiKey: distribution.apiKey,
    body,
  });

const burger = (quantity = 2) => ({
  itemId: ids.burger,
  lineItemId: randomUUID(),
  quantity,
  modifierGroups: [
    {
      modifierGroupId: ids.side,
      lineItems: [{ itemId: ids.fries, lineItemId: randomUUID(), quantity: 1 }],
    },
    {
      modifierGroupId: ids.extras,
      lineItems: [
        {
          itemId: ids.bacon,
          lineItemId: randomUUID(),
          quantity: 2,
          modifierGroups: [
            {
              modifierGroupId: ids.baconStyle,
              lineItems: [{ itemId: ids.crispy, lineItemId: randomUUID(), quantity: 1 }],
            },
          ],
        },
      ],
    },
  ],
});

describe('cart helpers', () => {
  it('starts a cart and prices it from the current CatalogSet in minor units', async () => {
    const catalogSetId = (
      await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, {
        apiKey: distribution.apiKey,
      })
    ).body.catalogSetId;
    const item = burger();
    const response = await cartCall('add', { item, cart: null, catalogSetId, storeId });
    expect(response.status).toBe(200);
    // 9.50 + fries 1.25 + 2 × bacon 1.10 (crispy 0) = 12.95 each; two burgers 25.90.
    expect(response.body).toMatchObject({
      catalogSetId,
      storeId,
      currency: 'USD',
      subTotal: 25.9,
      itemCount: 2,
      lineItems: [
        { lineItemId: item.lineItemId, name: 'Burger', unitPrice: 12.95, totalPrice: 25.9 },
      ],
    });
  });
});
