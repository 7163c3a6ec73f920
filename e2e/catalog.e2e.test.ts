import { randomUUID } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { createStore } from './ingest.js';

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

function newStore(): Promise<string> {
  return createStore(platform.baseUrl, commerce.apiKey);
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

describe('serving a large CatalogSet', () => {
  it('streams it chunk by chunk as the reader reads, never buffering the whole document', async () => {
    const storeId = await newStore();
    // About 8 MB: 1,600 items with 5,000-character descriptions, 16 stored chunks.
    const document = generateCatalogSet({ storeId, items: 1_600 });
    for (const item of Object.values(document.items)) item.description = 'd'.repeat(5_000);
    const accepted = await notify(storeId, host.serveJson(`/${storeId}.json`, document));
    expect((await waitForTerminal(accepted.body.statusUrl)).body.status).toBe('succeeded');
    const expectedBytes = Buffer.byteLength(JSON.stringify(document));
    const totalChunks = Math.ceil(expectedBytes / (512 * 1024));

    // Every chunk request the gateway makes for this HTTP request, seen by a plain
    // (non-queue) subscriber; ordering's own prefetch of the new version is not counted.
    const requestId = randomUUID();
    let chunkRequests = 0;
    const watcher = env.nc.subscribe(`${env.prefix}.catalog.v1.document.chunk`, {
      callback: (_error, msg) => {
        if (msg.headers?.get('X-Request-Id') === requestId) chunkRequests++;
      },
    });
    const url = new URL(`/v1/marketfront/stores/${storeId}/catalogset`, platform.baseUrl);
    const received: Buffer[] = [];
    let response!: IncomingMessage;
    await new Promise<void>((resolve, reject) => {
      const headers = { authorization: `Bearer ${distribution.apiKey}`, 'x-request-id': requestId };
      request(url, { headers }, (res) => {
        response = res;
        res.pause(); // a slow reader: nothing is read yet
        resolve();
      })
        .on('error', reject)
        .end();
    });
    onTestFinished(() => void response.destroy());
    expect(response.statusCode).toBe(200);
    expect(Number(response.headers['content-length'])).toBe(expectedBytes);
    // While the reader reads nothing, the gateway stops fetching once the socket is full.
    const settled = async () => {
      let last = -1;
      while (last !== chunkRequests) {
        last = chunkRequests;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      return last;
    };
    const fetchedWhilePaused = await settled();
    expect(fetchedWhilePaused).toBeLessThan(totalChunks);

    response.on('data', (chunk: Buffer) => received.push(chunk));
    await new Promise((resolve) => response.on('end', resolve).resume());
    watcher.unsubscribe();
    expect(chunkRequests).toBe(totalChunks);
    expect(JSON.parse(Buffer.concat(received).toString())).toEqual(document);
  });
});

describe('what every CatalogSet must respect', () => {
  it('fails an ingest whose document holds a NUL character, with its path', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 20 });
    const [itemId] = Object.keys(document.items);
    document.items[itemId!]!.name = 'Burger\u0000';
    const accepted = await notify(storeId, host.serveJson(`/${storeId}.json`, document));
    const done = await waitForTerminal(accepted.body.statusUrl);
    expect(done.body.status).toBe('failed');
    expect(done.body.errors).toEqual([
      { message: expect.stringMatching(/NUL/), path: `/items/${itemId}/name` },
    ]);
  });

  it('accepts upper-case GUIDs and serves them in lower case', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 50 });
    // The partner's platform emits every GUID (keys, ids, references) in upper case.
    const shouting = JSON.parse(
      JSON.stringify(document).replace(
        /"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"/g,
        (id) => id.toUpperCase(),
      ),
    ) as typeof document;
    expect(shouting.storeId).toBe(storeId.toUpperCase());
    const accepted = await notify(storeId, host.serveJson(`/${storeId}.json`, shouting));
    const done = await waitForTerminal(accepted.body.statusUrl);
    expect(done.body).toMatchObject({ status: 'succeeded', errors: [] });
    const served = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${storeId.toUpperCase()}/catalogset`,
      { apiKey: distribution.apiKey },
    );
    expect(served.status).toBe(200);
    expect(served.body).toEqual(document);
  });
});
