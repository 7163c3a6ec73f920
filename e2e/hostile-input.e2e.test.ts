import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startServiceProcess, waitUntilServing } from '@pcp/testing/service-process';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { ingestCatalog } from './ingest.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };
let storeId: string;
let ids: ReturnType<typeof cartTestCatalog>['ids'];
let catalogSetId: string;
let ordering: ChildProcess | undefined;

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
  catalogSetId = catalog.document.catalogSetId;
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document: catalog.document,
  });
});

afterAll(async () => {
  ordering?.kill('SIGKILL');
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const addSoda = () =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
    apiKey: distribution.apiKey,
    body: {
      cart: null,
      catalogSetId,
      storeId,
      item: { itemId: ids.soda, lineItemId: randomUUID(), quantity: 1 },
    },
  });

describe('one small hostile body cannot take a service down', () => {
  it('answers 4 modifier groups × 1,000 empty lines 20 times; the ordering process keeps pricing carts', async () => {
    // Ordering as its own process, so its survival is a process's, not this test runner's.
    await platform.ordering.stop();
    ordering = startServiceProcess('ordering', env);
    await waitUntilServing('ordering', env);

    const hostile = JSON.stringify({
      cart: null,
      catalogSetId,
      storeId,
      item: {
        itemId: ids.burger,
        lineItemId: randomUUID(),
        quantity: 1,
        modifierGroups: Array.from({ length: 4 }, () => ({
          modifierGroupId: ids.side,
          lineItems: Array.from({ length: 1_000 }, () => ({})),
        })),
      },
    });
    expect(hostile.length).toBeLessThan(13_000);
    for (let attempt = 0; attempt < 20; attempt++) {
      const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
        apiKey: distribution.apiKey,
        rawBody: hostile,
      });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(response.body.errorCode).toBe('REQUEST_INVALID');
      expect(response.body.errors.length).toBeGreaterThan(0);
      expect(response.body.errors.length).toBeLessThanOrEqual(100);
      expect(response.text.length).toBeLessThan(32_000);
    }

    const priced = await addSoda();
    expect(priced.status).toBe(200);
    expect(priced.body.lineItems).toHaveLength(1);
    expect(ordering.exitCode).toBeNull();
    expect(ordering.signalCode).toBeNull();
  });
});

describe('the NUL character, which Postgres cannot store', () => {
  it('is refused in a store profile at its pointer', async () => {
    const response = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${randomUUID()}`, {
      apiKey: commerce.apiKey,
      body: storeProfile({ name: 'Chicago\u0000Burgers' }),
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      errorCode: 'REQUEST_INVALID',
      errors: [{ code: 'INVALID_CHARACTER', pointer: '/name' }],
    });
  });

  it('is refused in a catalog notification at its pointer', async () => {
    const response = await call(
      platform.baseUrl,
      'POST',
      `/v1/commerce/catalogset-notification?storeId=${storeId}`,
      { apiKey: commerce.apiKey, body: { callbackUrl: 'https://partner.example/\u0000.json' } },
    );
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      errorCode: 'REQUEST_INVALID',
      errors: [{ code: 'INVALID_CHARACTER', pointer: '/callbackUrl' }],
    });
  });

  it('is refused in a forwarded cart body and in a property name', async () => {
    const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
      apiKey: distribution.apiKey,
      body: {
        cart: null,
        catalogSetId,
        storeId,
        item: { itemId: ids.soda, lineItemId: randomUUID(), quantity: 1 },
        'note\u0000': 'x',
      },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual([
      expect.objectContaining({ code: 'INVALID_CHARACTER', pointer: '/note\u0000' }),
    ]);
  });
});

describe('GUIDs compare case-insensitively', () => {
  it('prices a cart whose ids are upper case and answers them in lower case', async () => {
    const response = await call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
      apiKey: distribution.apiKey,
      body: {
        cart: null,
        catalogSetId: catalogSetId.toUpperCase(),
        storeId: storeId.toUpperCase(),
        item: { itemId: ids.soda.toUpperCase(), lineItemId: randomUUID(), quantity: 1 },
      },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      catalogSetId,
      storeId,
      lineItems: [{ itemId: ids.soda }],
    });
  });

  it('finds a store by an upper-case id', async () => {
    const response = await call(
      platform.baseUrl,
      'GET',
      `/v1/commerce/stores/${storeId.toUpperCase()}`,
      { apiKey: commerce.apiKey },
    );
    expect(response.status).toBe(200);
    expect(response.body.storeId).toBe(storeId);
  });
});
