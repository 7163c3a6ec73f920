import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { sql } from 'kysely';
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

// Short leases so a dead worker's run is taken over within seconds.
const LEASE_MS = '1500';

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {}, { CATALOG_INGEST_LEASE_MS: LEASE_MS });
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

async function notify(storeId: string, callbackUrl: string): Promise<string> {
  const response = await call(
    platform.baseUrl,
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    { apiKey: commerce.apiKey, body: { callbackUrl } },
  );
  expect(response.status).toBe(202);
  return response.body.statusUrl as string;
}

const status = async (statusUrl: string) =>
  (await call(platform.baseUrl, 'GET', statusUrl, { apiKey: commerce.apiKey })).body;

async function waitFor(statusUrl: string, wanted: RegExp, timeout = 20_000) {
  await expect
    .poll(async () => (await status(statusUrl)).status, { timeout, interval: 50 })
    .toMatch(wanted);
  return status(statusUrl);
}

async function served(storeId: string) {
  return call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, {
    apiKey: distribution.apiKey,
  });
}

/** A host path whose responses are held until the test releases them. */
function heldRoute(path: string, document: unknown) {
  const held: ServerResponse[] = [];
  const url = host.route(path, (_request, response) => {
    held.push(response);
  });
  return {
    url,
    requests: () => held.length,
    release() {
      for (const response of held.splice(0)) {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(document));
      }
    },
  };
}

describe('notification order', () => {
  it('never lets an earlier run replace a catalog a later notification activated', async () => {
    const storeId = await newStore();
    const first = generateCatalogSet({ storeId, items: 30, seed: 1 });
    const second = generateCatalogSet({ storeId, items: 40, seed: 2 });
    const slow = heldRoute(`/${storeId}/first`, first);

    const firstStatus = await notify(storeId, slow.url);
    await expect.poll(() => slow.requests()).toBe(1);
    const secondStatus = await notify(storeId, host.serveJson(`/${storeId}/second`, second));
    expect((await waitFor(secondStatus, /succeeded|failed/)).status).toBe('succeeded');

    slow.release();
    const superseded = await waitFor(firstStatus, /succeeded|failed/);
    expect(superseded.status).toBe('failed');
    expect(superseded.errors[0].message).toMatch(/later notification/);
    expect((await served(storeId)).body).toEqual(second);
  });

  it('applies concurrent notifications for one store so the last notified wins', async () => {
    const storeId = await newStore();
    const documents = [1, 2, 3, 4, 5].map((seed) =>
      generateCatalogSet({ storeId, items: 20 + seed, seed }),
    );
    const statusUrls = await Promise.all(
      documents.map((document, index) =>
        notify(storeId, host.serveJson(`/${storeId}/c${index}`, document)),
      ),
    );
    const outcomes = await Promise.all(statusUrls.map((url) => waitFor(url, /succeeded|failed/)));
    for (const outcome of outcomes) {
      if (outcome.status === 'failed')
        expect(outcome.errors[0].message).toMatch(/later notification/);
    }
    expect(outcomes.some((outcome) => outcome.status === 'succeeded')).toBe(true);

    // The notification that came last (highest sequence) is the one served.
    const last = await platform.catalogDb
      .selectFrom('ingest_runs')
      .select(['run_id', 'status'])
      .where('store_id', '=', storeId)
      .orderBy('sequence', 'desc')
      .executeTakeFirstOrThrow();
    expect(last.status).toBe('succeeded');
    const lastIndex = statusUrls.findIndex((url) => url.includes(last.run_id));
    expect((await served(storeId)).body).toEqual(documents[lastIndex]);
  });
});

describe('worker failure', () => {
  it('finishes a run whose worker process was killed mid-download', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 25 });
    // The first download hangs (the worker dies during it); the retry gets the document.
    let requests = 0;
    const url = host.route(`/${storeId}/killed`, (_request, response) => {
      requests += 1;
      if (requests > 1) {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(document));
      }
    });

    await platform.catalog.stop();
    const worker = startCatalogProcess();
    // The child answers the catalog's health subject once it serves requests.
    await expect
      .poll(
        async () => (await call(platform.baseUrl, 'GET', '/health/ready')).body.checks.catalog,
        {
          timeout: 20_000,
        },
      )
      .toBe(true);
    await notify(storeId, url);
    await expect.poll(() => requests, { timeout: 15_000 }).toBe(1);
    const run = await platform.catalogDb
      .selectFrom('ingest_runs')
      .selectAll()
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(run.status).toBe('pulling');
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));

    platform.catalog = platform.newCatalogService();
    await platform.catalog.start();
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${run.run_id}/status`;
    const finished = await waitFor(statusUrl, /succeeded|failed/);
    expect(finished.status).toBe('succeeded');
    const after = await platform.catalogDb
      .selectFrom('ingest_runs')
      .select(['attempts', 'lease_owner'])
      .where('run_id', '=', run.run_id)
      .executeTakeFirstOrThrow();
    expect(after).toEqual({ attempts: 2, lease_owner: null });
    expect((await served(storeId)).body).toEqual(document);
  });

  it('re-publishes a run whose work message was never published', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 10 });
    const runId = randomUUID();
    // As if the process died between the insert and the publish, a minute ago.
    await platform.catalogDb
      .insertInto('ingest_runs')
      .values({
        run_id: runId,
        store_id: storeId,
        partner_id: commerce.partnerId,
        callback_url: host.serveJson(`/${storeId}/orphan`, document),
        currency: 'USD',
        status: 'queued',
        created_at: sql<Date>`now() - interval '1 minute'`,
        updated_at: sql<Date>`now() - interval '1 minute'`,
      })
      .execute();
    expect(await platform.catalog.reconcile()).toBeGreaterThanOrEqual(1);
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;
    expect((await waitFor(statusUrl, /succeeded|failed/)).status).toBe('succeeded');
    expect((await served(storeId)).body).toEqual(document);
  });

  it('fails a run that keeps crashing instead of retrying it forever', async () => {
    const storeId = await newStore();
    const runId = randomUUID();
    await platform.catalogDb
      .insertInto('ingest_runs')
      .values({
        run_id: runId,
        store_id: storeId,
        partner_id: commerce.partnerId,
        callback_url: host.serveJson(
          `/${storeId}/crashy`,
          generateCatalogSet({ storeId, items: 5 }),
        ),
        currency: 'USD',
        status: 'processing',
        // Three earlier claims ended without an outcome (their workers died).
        attempts: 3,
        updated_at: sql<Date>`now() - interval '1 minute'`,
      })
      .execute();
    await platform.catalog.reconcile();
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;
    const failed = await waitFor(statusUrl, /succeeded|failed/);
    expect(failed.status).toBe('failed');
    expect(failed.errors[0].message).toContain(runId);
  });
});

/** The catalog service as its own process, on this file's database and prefix. */
function startCatalogProcess(): ChildProcess {
  const root = join(import.meta.dirname, '..');
  return spawn(
    process.execPath,
    ['--conditions=@pcp/source', '--import', 'tsx', join(root, 'services/catalog/src/main.ts')],
    {
      cwd: root,
      stdio: 'ignore',
      env: {
        ...process.env,
        DATABASE_URL: env.databaseUrl,
        NATS_SUBJECT_PREFIX: env.prefix,
        CATALOG_FETCH_ALLOW_HTTP: 'true',
        CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
        CATALOG_INGEST_LEASE_MS: LEASE_MS,
        MIGRATE_ON_START: 'false',
        OPS_PORT: '0',
        LOG_LEVEL: 'silent',
      },
    },
  );
}
