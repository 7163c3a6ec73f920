import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { storeProfile } from '@pcp/testing/fixtures';
import type { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';

/**
 * Host `document`, notify the store's ingest and wait until it succeeded (throwing with
 * its errors when it fails). Plain polling: it also runs in beforeAll, where expect.poll
 * is not available.
 */
export async function ingestCatalog(options: {
  baseUrl: string;
  apiKey: string;
  storeId: string;
  host: Awaited<ReturnType<typeof startCatalogHost>>;
  document: unknown;
}): Promise<void> {
  const { baseUrl, apiKey, storeId } = options;
  const accepted = await call(
    baseUrl,
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    {
      apiKey,
      body: { callbackUrl: options.host.serveJson(`/${randomUUID()}.json`, options.document) },
    },
  );
  for (let attempt = 0; attempt < 300; attempt++) {
    const status = await call(baseUrl, 'GET', accepted.body.statusUrl, { apiKey });
    if (status.body.status === 'succeeded') return;
    if (status.body.status === 'failed') throw new Error(JSON.stringify(status.body.errors));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('ingest did not finish');
}

/** Create a store with the default test profile for the partner with `apiKey`; its id. */
export async function createStore(baseUrl: string, apiKey: string): Promise<string> {
  const storeId = randomUUID();
  const response = await call(baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey,
    body: storeProfile(),
  });
  expect(response.status).toBe(201);
  return storeId;
}
