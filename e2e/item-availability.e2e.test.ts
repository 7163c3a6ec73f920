import { events, type StoreEventData } from '@pcp/contracts';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { createStore, ingestCatalog } from './ingest.js';

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

const path = (storeId: string) => `/v1/commerce/stores/${storeId}/item-availability`;
const marketfrontPath = (storeId: string) => `/v1/marketfront/stores/${storeId}/item-availability`;
const put = (storeId: string, body: unknown, apiKey = commerce.apiKey) =>
  call(platform.baseUrl, 'PUT', path(storeId), { apiKey, body });
const off = (itemId: string, until?: string | null) => ({ itemId, available: false, until });

/** A store of the commerce partner with an active catalog of `items` items; its item ids. */
async function storeWithCatalog(items: number) {
  const storeId = await createStore(platform.baseUrl, commerce.apiKey);
  const document = generateCatalogSet({ storeId, items });
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document,
  });
  return { storeId, itemIds: Object.keys(document.items) };
}

/** The store's events as published on the events stream, in stream order. */
async function publishedStoreEvents(storeId: string) {
  const jsm = await env.nc.jetstreamManager();
  const subject = `${env.prefix}.${events.storeChanged.subject}`;
  const stream = await jsm.streams.find(subject);
  const { state } = await jsm.streams.info(stream);
  const found: { version: number; data: StoreEventData }[] = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const message = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    if (!message || message.subject !== subject) continue;
    const envelope = events.storeChanged.schema.parse(message.json());
    if (envelope.data.storeId === storeId) found.push(envelope);
  }
  return found;
}

describe('item availability through the gateway', () => {
  it('sets, reads (commerce and marketfront) and clears overrides; the CatalogSet and its ETag stay', async () => {
    const { storeId, itemIds } = await storeWithCatalog(3);
    const [a, b] = itemIds as [string, string];
    const catalogPath = `/v1/marketfront/stores/${storeId}/catalogset`;
    const before = await call(platform.baseUrl, 'GET', catalogPath, {
      apiKey: distribution.apiKey,
    });

    const until = new Date(Date.now() + 3_600_000).toISOString();
    const set = await put(storeId, { items: [off(a, until), off(b)] });
    expect(set.status).toBe(200);
    expect(set.body.version).toBe(1);
    expect(set.body.items).toHaveLength(2);
    expect(set.body.items).toContainEqual({ itemId: a, available: false, until });
    expect(set.body.items).toContainEqual({ itemId: b, available: false, until: null });

    const read = await call(platform.baseUrl, 'GET', path(storeId), { apiKey: commerce.apiKey });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(set.body);
    const lookedUp = await call(platform.baseUrl, 'GET', marketfrontPath(storeId), {
      apiKey: distribution.apiKey,
    });
    expect(lookedUp.status).toBe(200);
    expect(lookedUp.body).toEqual(set.body);

    const after = await call(platform.baseUrl, 'GET', catalogPath, { apiKey: distribution.apiKey });
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
    expect(after.text).toBe(before.text);

    const cleared = await put(storeId, { items: [{ itemId: a, available: true }] });
    expect(cleared.body).toEqual({
      items: [{ itemId: b, available: false, until: null }],
      version: 2,
    });
  });

  it('refuses hostile bodies with pointers, and other partners’ stores', async () => {
    const { storeId, itemIds } = await storeWithCatalog(3);
    const refused = async (body: unknown, pointer: string | undefined) => {
      const response = await put(storeId, body);
      expect(response.status).toBe(400);
      expect(response.body.errorCode).toBe('REQUEST_INVALID');
      if (pointer !== undefined) {
        expect(response.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
      }
      expect(response.text).not.toMatch(/stack|select |catalog_versions|at .*\.js/i);
    };
    await refused({ items: Array.from({ length: 1_001 }, () => off(randomUUID())) }, '/items');
    await refused({ items: [] }, '/items');
    await refused({ items: [{ itemId: 'not-a-guid', available: false }] }, '/items/0/itemId');
    // A 3-item catalog and 4 overrides: the fourth is unknown.
    await refused(
      { items: [...itemIds.map((id) => off(id)), off(randomUUID())] },
      '/items/3/itemId',
    );
    await refused({ items: [off(itemIds[0]!, '2020-01-01T00:00:00Z')] }, '/items/0/until');
    const tenYears = new Date(Date.now() + 10 * 365 * 86_400_000).toISOString();
    await refused({ items: [off(itemIds[0]!, tenYears)] }, '/items/0/until');
    await refused({ items: [off(itemIds[0]!), off(itemIds[0]!)] }, '/items/1/itemId');
    const unchanged = await call(platform.baseUrl, 'GET', path(storeId), {
      apiKey: commerce.apiKey,
    });
    expect(unchanged.body).toEqual({ items: [], version: 0 });

    const stranger = await platform.newPartner('commerce');
    const foreign = await put(storeId, { items: [off(itemIds[0]!)] }, stranger.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.errorCode).toBe('STORE_NOT_FOUND');
    const malformed = await call(platform.baseUrl, 'GET', marketfrontPath('not-a-guid'), {
      apiKey: distribution.apiKey,
    });
    expect(malformed.status).toBe(404);
    expect(malformed.text).toBe('');
    const unknown = await call(platform.baseUrl, 'GET', marketfrontPath(randomUUID()), {
      apiKey: distribution.apiKey,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.errorCode).toBe('STORE_NOT_FOUND');
    // Distribution partners read; they never write.
    const wrongKind = await put(storeId, { items: [off(itemIds[0]!)] }, distribution.apiKey);
    expect(wrongKind.status).toBe(403);

    const bare = await createStore(platform.baseUrl, commerce.apiKey);
    const noCatalog = await put(bare, { items: [off(randomUUID())] });
    expect(noCatalog.status).toBe(404);
    expect(noCatalog.body.errorCode).toBe('CATALOGSET_NOT_FOUND');
  });

  it('drops overrides of items a new catalog lacks at activation, and publishes the store events in order', async () => {
    const storeId = await createStore(platform.baseUrl, commerce.apiKey);
    const four = generateCatalogSet({ storeId, items: 4 });
    const three = generateCatalogSet({ storeId, items: 3 });
    const kept = Object.keys(three.items);
    const dropped = Object.keys(four.items).filter((id) => !kept.includes(id));
    expect(dropped).toHaveLength(1);
    await ingestCatalog({
      baseUrl: platform.baseUrl,
      apiKey: commerce.apiKey,
      storeId,
      host,
      document: four,
    });
    expect((await put(storeId, { items: [off(kept[0]!), off(dropped[0]!)] })).status).toBe(200);
    const status = await call(platform.baseUrl, 'POST', `/v1/commerce/stores/${storeId}/status`, {
      apiKey: commerce.apiKey,
      body: { status: 'paused', reason: 'staff_shortage' },
    });
    expect(status.status).toBe(200);

    await ingestCatalog({
      baseUrl: platform.baseUrl,
      apiKey: commerce.apiKey,
      storeId,
      host,
      document: three,
    });
    await expect
      .poll(
        async () =>
          (await call(platform.baseUrl, 'GET', path(storeId), { apiKey: commerce.apiKey })).body,
      )
      .toEqual({ items: [{ itemId: kept[0]!, available: false, until: null }], version: 2 });

    await expect
      .poll(async () => (await publishedStoreEvents(storeId)).map((event) => event.data.event))
      .toEqual([
        'catalog.activated',
        'store.items_availability_changed',
        'store.status_changed',
        'catalog.activated',
        'store.items_availability_changed',
      ]);
    const published = await publishedStoreEvents(storeId);
    expect(published.map((event) => event.version)).toEqual([1, 2, 3, 4, 5]);
    expect(published[3]!.data).toMatchObject({ catalogSetId: three.catalogSetId });
    expect(published[4]!.data).toEqual({
      event: 'store.items_availability_changed',
      storeId,
      itemAvailabilityVersion: 2,
      items: [{ itemId: dropped[0]!, available: true, until: null }],
      mode: 'live',
    });
  });
});
