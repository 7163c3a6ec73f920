import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCatalogSet } from '../scripts/lib/catalog-generator.mjs';
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

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  host = await startCatalogHost();
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

async function newStore(): Promise<string> {
  const storeId = randomUUID();
  const response = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile(),
  });
  expect(response.status).toBe(201);
  return storeId;
}

async function notify(storeId: string, callbackUrl: string) {
  return call(platform.baseUrl, 'POST', `/v1/commerce/catalogset-notification?storeId=${storeId}`, {
    apiKey: commerce.apiKey,
    body: { callbackUrl },
  });
}

async function waitForTerminal(statusUrl: string) {
  let last: Awaited<ReturnType<typeof call>> | undefined;
  await expect
    .poll(
      async () => {
        last = await call(platform.baseUrl, 'GET', statusUrl, { apiKey: commerce.apiKey });
        return last.body.status;
      },
      { timeout: 15_000, interval: 50 },
    )
    .toMatch(/^(succeeded|failed)$/);
  return last!;
}

describe('catalog ingest', () => {
  it('accepts a notification, pulls the CatalogSet and serves it with an ETag', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 200 });
    const accepted = await notify(storeId, host.serveJson(`/${storeId}.json`, document));
    expect(accepted.status).toBe(202);
    expect(accepted.body.catalogIngestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(accepted.headers.get('location')).toBe(accepted.body.statusUrl);
    expect(Number(accepted.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const done = await waitForTerminal(accepted.body.statusUrl);
    expect(done.body).toMatchObject({
      catalogIngestId: accepted.body.catalogIngestId,
      storeId,
      status: 'succeeded',
      errors: [],
      summary: { items: 200, added: 200, removed: 0, priceChanged: 0 },
    });
    expect(done.headers.get('retry-after')).toBeNull();

    const path = `/v1/marketfront/stores/${storeId}/catalogset`;
    const served = await call(platform.baseUrl, 'GET', path, { apiKey: distribution.apiKey });
    expect(served.status).toBe(200);
    expect(served.body).toEqual(document);
    const etag = served.headers.get('etag');
    expect(etag).toMatch(/^".+"$/);
    const revalidated = await call(platform.baseUrl, 'GET', path, {
      apiKey: distribution.apiKey,
      headers: { 'if-none-match': etag! },
    });
    expect(revalidated.status).toBe(304);
    expect(revalidated.text).toBe('');

    // catalog.v1.activated reaches the stores service, which records the active CatalogSet.
    await expect
      .poll(async () => {
        const store = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}`, {
          apiKey: distribution.apiKey,
        });
        return store.body.catalogSetId;
      })
      .toBe(document.catalogSetId);
  });
});
