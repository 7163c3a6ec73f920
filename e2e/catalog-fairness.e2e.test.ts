/**
 * Shared ingest capacity (docs/guide/catalogs.md#ingest): claims alternate between partners, a
 * dripping callback loses its slot for rate, a partner's queue and dry runs are capped by its
 * share, and old finished runs are pruned.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CatalogDatabase } from '@pcp/catalog';
import { sql, type InsertObject } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { createStore } from './ingest.js';

type Partner = { partnerId: string; apiKey: string };

const POLL = { timeout: 15_000, interval: 20 };

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  host = await startCatalogHost();
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

let restoreCatalog: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restoreCatalog?.();
  restoreCatalog = undefined;
});

/** Run this test against one catalog service configured with `overrides`. */
async function replaceCatalog(overrides: Record<string, string>) {
  await platform.catalog.stop();
  const service = platform.newCatalogService(overrides);
  await service.start();
  platform.catalog = service;
  restoreCatalog = async () => {
    await service.stop();
    platform.catalog = platform.newCatalogService();
    await platform.catalog.start();
  };
}

function newStore(partner: Partner): Promise<string> {
  return createStore(platform.baseUrl, partner.apiKey);
}

function notify(storeId: string, callbackUrl: string, partner: Partner) {
  return call(platform.baseUrl, 'POST', `/v1/commerce/catalogset-notification?storeId=${storeId}`, {
    apiKey: partner.apiKey,
    body: { callbackUrl },
  });
}

async function notified(storeId: string, callbackUrl: string, partner: Partner): Promise<string> {
  const response = await notify(storeId, callbackUrl, partner);
  expect(response.status).toBe(202);
  return response.body.statusUrl as string;
}

async function waitFor(statusUrl: string, partner: Partner, timeout = 20_000) {
  const status = async () =>
    (await call(platform.baseUrl, 'GET', statusUrl, { apiKey: partner.apiKey })).body;
  await expect
    .poll(async () => (await status()).status, { timeout, interval: 50 })
    .toMatch(/succeeded|failed/);
  return status();
}

function expectProblem(response: HttpResult, status: number, errorCode: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({ status, errorCode, detail: expect.any(String) });
}

/** Host paths whose downloads are held until released; records the order downloads began. */
function heldRoutes() {
  const started: string[] = [];
  const held = new Map<string, ServerResponse>();
  const documents = new Map<string, unknown>();
  return {
    started,
    add(name: string, storeId: string): string {
      documents.set(name, generateCatalogSet({ storeId, items: 5 }));
      return host.route(`/held/${name}`, (_request, response) => {
        started.push(name);
        held.set(name, response);
      });
    },
    release(name: string) {
      const response = held.get(name);
      if (!response) throw new Error(`${name} has not started`);
      held.delete(name);
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(documents.get(name)));
    },
  };
}

describe('fair claims between partners', () => {
  it(
    'starts another partner’s run before the flooder’s backlog drains, then alternates',
    { timeout: 60_000 },
    async () => {
      // One slot in all: the order in which runs start is the order of claims.
      await replaceCatalog({ CATALOG_INGEST_CONCURRENCY: '1' });
      const flooder = await platform.newPartner('commerce');
      const victim = await platform.newPartner('commerce');
      const routes = heldRoutes();
      const floodStatus: string[] = [];
      for (let i = 0; i < 4; i++) {
        const storeId = await newStore(flooder);
        floodStatus.push(await notified(storeId, routes.add(`flood-${i}`, storeId), flooder));
      }
      const victimStore = await newStore(victim);
      const victimStatus = await notified(victimStore, routes.add('victim', victimStore), victim);

      await expect.poll(() => routes.started, POLL).toEqual(['flood-0']);
      routes.release('flood-0');
      // FIFO would start flood-1 next; the partner served least recently goes first.
      await expect.poll(() => routes.started, POLL).toEqual(['flood-0', 'victim']);
      await sleep(200);
      expect(routes.started).toEqual(['flood-0', 'victim']);
      routes.release('victim');
      expect((await waitFor(victimStatus, victim)).status).toBe('succeeded');

      // Only the flooder waits now: its runs go in notification order.
      for (let i = 1; i < 4; i++) {
        await expect.poll(() => routes.started.at(-1), POLL).toBe(`flood-${i}`);
        routes.release(`flood-${i}`);
      }
      for (const statusUrl of floodStatus) {
        expect((await waitFor(statusUrl, flooder)).status).toBe('succeeded');
      }
    },
  );
});

describe('minimum download rate', () => {
  it(
    'fails a run whose callback drips its document, long before the fetch timeout',
    { timeout: 60_000 },
    async () => {
      await replaceCatalog({
        CATALOG_INGEST_MIN_BYTES_PER_SEC: '1024',
        CATALOG_INGEST_MIN_RATE_GRACE_MS: '500',
      });
      const partner = await platform.newPartner('commerce');
      const storeId = await newStore(partner);
      const url = host.route(`/drip/${storeId}`, (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => response.write(' '), 200);
        response.on('close', () => clearInterval(timer));
      });
      // The fetch timeout (60 s by default) is three times what this waits.
      const failed = await waitFor(await notified(storeId, url, partner), partner);
      expect(failed).toMatchObject({
        status: 'failed',
        errors: [{ message: 'the download from callbackUrl was slower than 1 KB per second' }],
      });
    },
  );
});

describe('a partner’s queue of runs is capped', () => {
  it(
    'refuses a notification beyond CATALOG_INGEST_MAX_QUEUED_PER_PARTNER, still replaces a store’s queued run, and admits other partners',
    { timeout: 60_000 },
    async () => {
      await replaceCatalog({
        CATALOG_INGEST_CONCURRENCY: '1',
        CATALOG_INGEST_MAX_QUEUED_PER_PARTNER: '2',
      });
      const partner = await platform.newPartner('commerce');
      const routes = heldRoutes();
      const stores = [];
      for (let i = 0; i < 4; i++) stores.push(await newStore(partner));
      // The first run starts (held), the next two wait: the queue is full.
      await notified(stores[0]!, routes.add('queue-0', stores[0]!), partner);
      await expect.poll(() => routes.started, POLL).toEqual(['queue-0']);
      await notified(stores[1]!, routes.add('queue-1', stores[1]!), partner);
      await notified(stores[2]!, routes.add('queue-2', stores[2]!), partner);

      const refused = await notify(stores[3]!, routes.add('queue-3', stores[3]!), partner);
      expectProblem(refused, 429, 'CATALOG_INGEST_QUEUE_FULL');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // The refusal recorded nothing.
      const runsOfStore3 = await platform.catalogDb
        .selectFrom('ingest_runs')
        .select('run_id')
        .where('store_id', '=', stores[3]!)
        .execute();
      expect(runsOfStore3).toEqual([]);

      // A newer notification for a store with a queued run replaces that run: still two queued.
      const replacing = await notified(stores[1]!, routes.add('queue-1b', stores[1]!), partner);
      // Another partner's queue is its own.
      const other = await platform.newPartner('commerce');
      const otherStore = await newStore(other);
      await notified(otherStore, routes.add('other', otherStore), other);

      routes.release('queue-0');
      await expect.poll(() => routes.started.length, POLL).toBe(2);
      routes.release(routes.started[1]!);
      await expect.poll(() => routes.started.length, POLL).toBe(3);
      routes.release(routes.started[2]!);
      await expect.poll(() => routes.started.length, POLL).toBe(4);
      routes.release(routes.started[3]!);
      expect([...routes.started].sort()).toEqual(['other', 'queue-0', 'queue-1b', 'queue-2']);
      expect((await waitFor(replacing, partner)).status).toBe('succeeded');
    },
  );
});

describe('dry runs share a replica', () => {
  it(
    'refuses a partner beyond its share with 429 while a third partner’s dry run still runs (defaults)',
    { timeout: 60_000 },
    async () => {
      const partners = [
        await platform.newPartner('commerce'),
        await platform.newPartner('commerce'),
        await platform.newPartner('commerce'),
      ];
      const stores = [];
      for (const partner of partners) stores.push(await newStore(partner));
      const held: ServerResponse[] = [];
      const slowUrl = host.route(`/slow-dry-run`, (_request, response) => {
        held.push(response);
      });
      const dryRun = (storeId: string, url: string, partner: Partner) =>
        call(platform.baseUrl, 'POST', `/v1/commerce/stores/${storeId}/catalogset-validation`, {
          apiKey: partner.apiKey,
          body: { callbackUrl: url },
        });

      const first = dryRun(stores[0]!, slowUrl, partners[0]!);
      await expect.poll(() => held.length, POLL).toBe(1);
      const second = dryRun(stores[1]!, slowUrl, partners[1]!);
      await expect.poll(() => held.length, POLL).toBe(2);

      expectProblem(await dryRun(stores[0]!, slowUrl, partners[0]!), 429, 'RATE_LIMITED');
      const document = generateCatalogSet({ storeId: stores[2]!, items: 6 });
      const third = await dryRun(
        stores[2]!,
        host.serveJson(`/dry-${stores[2]}.json`, document),
        partners[2]!,
      );
      expect(third.status).toBe(200);
      expect(third.body).toMatchObject({ valid: true });

      for (const response of held) response.writeHead(200).end('{');
      expect((await first).body).toMatchObject({ valid: false });
      expect((await second).body).toMatchObject({ valid: false });
    },
  );
});

describe('pruning finished runs', () => {
  it(
    'deletes finished runs past the retention but keeps each store’s latest, the active catalog’s, recent and unfinished ones',
    { timeout: 60_000 },
    async () => {
      const partner = await platform.newPartner('commerce');
      const activeStore = await newStore(partner);
      const otherStore = await newStore(partner);
      // A real activation: its run is the one the active catalog came from.
      const activeStatus = await notified(
        activeStore,
        host.serveJson(
          `/prune/${activeStore}`,
          generateCatalogSet({ storeId: activeStore, items: 5 }),
        ),
        partner,
      );
      const activeRun = await waitFor(activeStatus, partner);
      expect(activeRun.status).toBe('succeeded');
      const old = sql<Date>`now() - interval '40 days'`;
      await platform.catalogDb
        .updateTable('ingest_runs')
        .set({ updated_at: old, created_at: old })
        .where('run_id', '=', activeRun.catalogIngestId)
        .execute();

      const runs = {
        // Failed after the active one, so the active one is not its store's latest.
        laterFailed: await insertRun({ store_id: activeStore, status: 'failed', updated_at: old }),
        oldFailed: await insertRun({ store_id: otherStore, status: 'failed', updated_at: old }),
        oldSucceeded: await insertRun({
          store_id: otherStore,
          status: 'succeeded',
          updated_at: old,
        }),
        recentFailed: await insertRun({ store_id: otherStore, status: 'failed' }),
        oldUnfinished: await insertRun({
          store_id: otherStore,
          status: 'processing',
          updated_at: old,
        }),
        latest: await insertRun({ store_id: otherStore, status: 'failed', updated_at: old }),
      };

      expect(await platform.catalog.pruneRuns()).toBeGreaterThanOrEqual(2);
      const left = new Set(
        (
          await platform.catalogDb
            .selectFrom('ingest_runs')
            .select('run_id')
            .where('store_id', 'in', [activeStore, otherStore])
            .execute()
        ).map((row) => row.run_id),
      );
      expect(left).toEqual(
        new Set([
          activeRun.catalogIngestId,
          runs.laterFailed,
          runs.recentFailed,
          runs.oldUnfinished,
          runs.latest,
        ]),
      );
      // The pruned run's status is gone; the kept one still reads.
      const pruned = await call(
        platform.baseUrl,
        'GET',
        `/v1/commerce/stores/${otherStore}/catalog-ingest/${runs.oldFailed}/status`,
        { apiKey: partner.apiKey },
      );
      expectProblem(pruned, 404, 'CATALOG_INGEST_NOT_FOUND');
      expect((await waitFor(activeStatus, partner)).status).toBe('succeeded');

      /** A finished or abandoned run written directly, after those before it. */
      async function insertRun(
        run: Pick<
          InsertObject<CatalogDatabase, 'ingest_runs'>,
          'store_id' | 'status' | 'updated_at'
        >,
      ): Promise<string> {
        const runId = randomUUID();
        await platform.catalogDb
          .insertInto('ingest_runs')
          .values({
            run_id: runId,
            partner_id: partner.partnerId,
            callback_url: `${host.base}/never`,
            currency: 'USD',
            ...run,
          })
          .execute();
        return runId;
      }
    },
  );
});
