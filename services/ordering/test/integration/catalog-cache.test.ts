import { subjects, type MarketfrontStore } from '@pcp/contracts';
import {
  createBusClient,
  handle,
  handleBytes,
  serveSubjects,
  type ServedService,
} from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '../../../../test-support/cart-catalog.js';
import {
  createTestEnvironment,
  type TestEnvironment,
} from '../../../../test-support/environment.js';
import { createCatalogCache } from '../../src/catalog/catalog-cache.js';

// The catalog and stores services stand in as responders on real NATS, counting requests.
const storeId = randomUUID();
const { document } = cartTestCatalog(storeId);
const documentBytes = Buffer.from(JSON.stringify(document));
const calls = { active: 0, lookup: 0, document: 0 };
/** What the stand-in catalog service reports as active. */
let active = { versionId: randomUUID(), activatedAt: '2026-01-01T00:00:00.000Z' };
/** Held open to keep an active-version request in flight. */
let activeAnswers = Promise.resolve();

const storeView = (id: string): MarketfrontStore => ({
  storeId: id,
  name: 'Cache Test Kitchen',
  phone: '+15551234567',
  timezone: 'America/Chicago',
  currency: 'USD',
  address: {
    address1: '1 Main St',
    address2: null,
    city: 'Chicago',
    state: 'IL',
    postalCode: '60601',
    country: 'US',
    latitude: 41.88,
    longitude: -87.63,
  },
  fulfillmentTypes: ['PICKUP'],
  availability: [],
  delivery: null,
  pickup: { etaMinutes: 15 },
  taxRate: 0,
  minimumOrder: 0,
  status: 'online',
  isOpenNow: false,
  nextOpenAt: null,
  catalogSetId: document.catalogSetId,
});

/** Active versions of the other stores some tests use (each serves the same document). */
const otherStores = new Map<string, string>();
const activeCatalog = (id: string = storeId) => {
  const version =
    id === storeId
      ? active
      : { versionId: otherStores.get(id) ?? randomUUID(), activatedAt: active.activatedAt };
  otherStores.set(id, version.versionId);
  return {
    storeId: id,
    catalogSetId: document.catalogSetId,
    currency: 'USD',
    etag: `"${version.versionId}"`,
    ...version,
  };
};

let env: TestEnvironment;
const served: ServedService[] = [];
const ctx = () => ({ requestId: randomUUID() });
const newCache = (activeVersionTtlMs: number, maxBytes = 64 * 1024 * 1024) =>
  createCatalogCache({
    bus: createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger }),
    logger: env.logger,
    maxBytes,
    activeVersionTtlMs,
  });

/** A promise with the function that settles it. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

beforeAll(async () => {
  env = await createTestEnvironment();
  const options = { version: '0.0.1', prefix: env.prefix, timeoutMs: 5_000, logger: env.logger };
  served.push(
    await serveSubjects(env.nc, { ...options, service: 'catalog' }, [
      handle(subjects.catalog.active, async ({ storeId: id }) => {
        calls.active++;
        const answer = activeCatalog(id);
        await activeAnswers;
        return answer;
      }),
      handle(subjects.catalog.document, async ({ storeId: id }) => {
        calls.document++;
        return {
          ...activeCatalog(id),
          notModified: false,
          totalBytes: documentBytes.length,
          chunks: 2,
        };
      }),
      // The document in two chunks, as the catalog service stores it.
      handleBytes(subjects.catalog.documentChunk, async ({ index }) => {
        const half = Math.ceil(documentBytes.length / 2);
        return documentBytes.subarray(index * half, (index + 1) * half);
      }),
    ]),
    await serveSubjects(env.nc, { ...options, service: 'stores' }, [
      handle(subjects.stores.lookup, async ({ storeId: id }) => {
        calls.lookup++;
        return storeView(id);
      }),
    ]),
  );
});

afterAll(async () => {
  for (const service of served) await service.stop();
  await env?.cleanup();
});

beforeEach(() => {
  calls.active = 0;
  calls.lookup = 0;
  calls.document = 0;
  activeAnswers = Promise.resolve();
});

describe('the catalog cache under concurrent carts', () => {
  it('asks each service once for a cold store, however many carts arrive together', async () => {
    const cache = newCache(60_000);
    const priced = await Promise.all(Array.from({ length: 20 }, () => cache.get(storeId, ctx())));
    expect(new Set(priced.map((entry) => entry.catalog)).size).toBe(1);
    expect(priced[0]?.catalog.versionId).toBe(active.versionId);
    expect(priced[0]?.timezone).toBe('America/Chicago');
    expect(calls).toEqual({ active: 1, lookup: 1, document: 1 });
  });

  it('confirms an expired active version once while carts wait, and keeps the catalog', async () => {
    const cache = newCache(20);
    await cache.get(storeId, ctx());
    await new Promise((resolve) => setTimeout(resolve, 40));
    const held = gate();
    activeAnswers = held.promise;
    const waiting = Array.from({ length: 20 }, () => cache.get(storeId, ctx()));
    await expect.poll(() => calls.active).toBe(2);
    held.open();
    const priced = await Promise.all(waiting);
    expect(priced.every((entry) => entry.catalog.versionId === active.versionId)).toBe(true);
    expect(calls).toEqual({ active: 2, lookup: 1, document: 1 });
  });

  it('does not roll back to an older version answered after a newer activation event', async () => {
    const cache = newCache(60_000);
    const held = gate();
    activeAnswers = held.promise;
    const racing = cache.get(storeId, ctx());
    await expect.poll(() => calls.active).toBe(1);
    // The catalog answers with the version it had; the event of a newer one lands first.
    active = { versionId: randomUUID(), activatedAt: '2026-06-01T00:00:00.000Z' };
    cache.activated(storeId, active.versionId, active.activatedAt, randomUUID());
    held.open();
    expect((await racing).catalog.versionId).toBe(active.versionId);
    expect((await cache.get(storeId, ctx())).catalog.versionId).toBe(active.versionId);
    // One download of the new version (the event's prefetch and the cart share it).
    expect(calls.document).toBe(1);
  });
});

describe('the memory the cache may use', () => {
  it('keeps compiled catalogs within its byte budget, evicting the least recently used', async () => {
    // Room for two compiled catalogs of this document (estimated at twice its bytes).
    const cache = newCache(60_000, documentBytes.length * 2 * 2.5);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await cache.get(a, ctx());
    await cache.get(b, ctx());
    await cache.get(a, ctx()); // a is now the most recently used
    expect(calls.document).toBe(2);
    await cache.get(c, ctx()); // over budget: b goes, not a
    expect(calls.document).toBe(3);
    await cache.get(a, ctx());
    expect(calls.document).toBe(3);
    await cache.get(b, ctx());
    expect(calls.document).toBe(4);
  });
});
