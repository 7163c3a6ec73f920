import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { subjects } from '@pcp/contracts';
import {
  applyJetStreamTopology,
  createBusClient,
  jetStreamTopology,
  streamName,
} from '@pcp/service-kit';
import type { CatalogDatabase } from '@pcp/catalog';
import { setRateLimits } from '@pcp/gateway/admin';
import { sql, type InsertObject } from 'kysely';
import {
  afterAll,
  afterEach,
  beforeAll,
  beforeEach,
  describe,
  expect,
  it,
  onTestFinished,
} from 'vitest';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { countsBy, growth } from '@pcp/testing/metrics';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startServiceProcess, waitUntilServing } from '@pcp/testing/service-process';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { createStore } from './ingest.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { partnerId: string; apiKey: string };
let distribution: { partnerId: string; apiKey: string };

// Short leases so a dead worker's run is taken over within seconds.
const LEASE_MS = '1500';

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, { catalogEnv: { CATALOG_INGEST_LEASE_MS: LEASE_MS } });
  host = await startCatalogHost();
  distribution = await platform.newPartner('distribution');
});

// A partner of its own per test: a run one test leaves in progress never holds the next
// test's runs behind the per-partner cap.
beforeEach(async () => {
  commerce = await platform.newPartner('commerce');
  // These tests poll ingest status every few milliseconds for as long as an ingest takes on a
  // loaded machine: past the default 1,000 reads a minute, a 429 would stand in for the status.
  await setRateLimits(platform.gatewayDb, commerce.partnerId, { reads: 100_000 });
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

let restoreCatalog: (() => Promise<void>) | undefined;
afterEach(async () => {
  // A test that failed mid-way leaves downloads held: answer them so their runs finish.
  for (const release of heldReleases.splice(0)) release();
  await restoreCatalog?.();
  restoreCatalog = undefined;
  await expectNoRunInProgress();
});

/**
 * Every run of this file ends before the next test starts: the ingest work queue is shared,
 * and a run left in progress would hold the next test's runs behind it. A test that leaves
 * one fails here, and its runs are failed and the queue emptied so the next test still starts
 * clean.
 */
async function expectNoRunInProgress() {
  const inProgress = () =>
    platform.catalogDb
      .selectFrom('ingest_runs')
      .select(['run_id', 'status'])
      .where('status', 'in', ['queued', 'pulling', 'processing'])
      .execute();
  try {
    await expect.poll(async () => (await inProgress()).length, { timeout: 20_000 }).toBe(0);
  } catch (error) {
    const left = await inProgress();
    await platform.catalogDb
      .updateTable('ingest_runs')
      .set({ status: 'failed', lease_owner: null, parked_at: null })
      .where('status', 'in', ['queued', 'pulling', 'processing'])
      .execute();
    const jsm = await env.nc.jetstreamManager();
    await jsm.streams.purge(streamName(env.prefix, 'catalog_ingest'));
    throw new Error(`runs left in progress after the test: ${JSON.stringify(left)}`, {
      cause: error,
    });
  }
}

/**
 * Run this test against `replicas` catalog services configured with `overrides` (all in
 * this process, sharing the database and the work queue); the default one is back after.
 */
async function replaceCatalog(overrides: Record<string, string>, replicas = 1) {
  await platform.catalog.stop();
  const services = Array.from({ length: replicas }, () => platform.newCatalogService(overrides));
  for (const service of services) await service.start();
  platform.catalog = services[0]!;
  restoreCatalog = async () => {
    for (const service of services) await service.stop();
    platform.catalog = platform.newCatalogService();
    await platform.catalog.start();
  };
}

function newStore(partner = commerce): Promise<string> {
  return createStore(platform.baseUrl, partner.apiKey);
}

async function notify(storeId: string, callbackUrl: string, partner = commerce): Promise<string> {
  const response = await call(
    platform.baseUrl,
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    { apiKey: partner.apiKey, body: { callbackUrl } },
  );
  expect(response.status).toBe(202);
  return response.body.statusUrl as string;
}

const status = async (statusUrl: string, partner = commerce) =>
  (await call(platform.baseUrl, 'GET', statusUrl, { apiKey: partner.apiKey })).body;

async function waitFor(statusUrl: string, wanted: RegExp, timeout = 20_000, partner = commerce) {
  await expect
    .poll(async () => (await status(statusUrl, partner)).status, { timeout, interval: 50 })
    .toMatch(wanted);
  return status(statusUrl, partner);
}

/** The ingest work queue's durable consumer, as JetStream sees it. */
async function ingestConsumer() {
  const jsm = await env.nc.jetstreamManager();
  return jsm.consumers.info(streamName(env.prefix, 'catalog_ingest'), 'catalog-ingest');
}

async function ingestStreamMessages() {
  const jsm = await env.nc.jetstreamManager();
  return (await jsm.streams.info(streamName(env.prefix, 'catalog_ingest'))).state.messages;
}

async function served(storeId: string) {
  return call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, {
    apiKey: distribution.apiKey,
  });
}

/** Releases of the current test's held routes, for afterEach. */
const heldReleases: (() => void)[] = [];

/** A host path whose responses are held until the test releases them (or the test ends). */
function heldRoute(path: string, document: unknown) {
  const held: ServerResponse[] = [];
  let requests = 0;
  // Once the test has ended, a retry's download is answered at once.
  let testEnded = false;
  const url = host.route(path, (_request, response) => {
    requests += 1;
    held.push(response);
    if (testEnded) release();
  });
  const release = () => {
    for (const response of held.splice(0)) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document));
    }
  };
  heldReleases.push(() => {
    testEnded = true;
    release();
  });
  return {
    url,
    /** Requests so far, released or not. */
    requests: () => requests,
    release,
  };
}

/** Ingest runs the current catalog service finished, by outcome. */
const ingestRuns = () =>
  countsBy(
    platform.metrics.get('catalog')!.registry,
    'pcp_catalog_ingest_run_duration_seconds',
    'outcome',
  );

describe('notification order', () => {
  it('never lets an earlier run replace a catalog a later notification activated', async () => {
    // Both runs of the store in progress at once: the partner's share must admit two.
    await replaceCatalog({ CATALOG_INGEST_MAX_RUNS_PER_PARTNER: '2' });
    const storeId = await newStore();
    const first = generateCatalogSet({ storeId, items: 30, seed: 1 });
    const second = generateCatalogSet({ storeId, items: 40, seed: 2 });
    const slow = heldRoute(`/${storeId}/first`, first);

    const runsBefore = await ingestRuns();
    const firstStatus = await notify(storeId, slow.url);
    await expect.poll(() => slow.requests()).toBe(1);
    const secondStatus = await notify(storeId, host.serveJson(`/${storeId}/second`, second));
    expect((await waitFor(secondStatus, /succeeded|failed/)).status).toBe('succeeded');

    slow.release();
    const superseded = await waitFor(firstStatus, /succeeded|failed/);
    expect(superseded.status).toBe('failed');
    expect(superseded.errors[0].message).toMatch(/later notification/);
    expect(growth(runsBefore, await ingestRuns())).toEqual({ succeeded: 1, superseded: 1 });
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
    const worker = await startCatalogProcess();
    onTestFinished(() => void worker.kill('SIGKILL'));
    // The child answers the catalog's health subject once it serves requests.
    await waitUntilServing('catalog', env);
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

  /** A catalog process mid-download of `storeId`'s document, and how to stop it. */
  async function workerMidDownload(storeId: string, shutdownTimeoutMs: string, hold: boolean) {
    const document = generateCatalogSet({ storeId, items: 25 });
    let requests = 0;
    const url = host.route(`/${storeId}/sigterm`, (_request, response) => {
      requests += 1;
      // The worker's download takes a second; held, it outlasts the worker's deadline.
      if (hold && requests === 1) return;
      setTimeout(() => {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(document));
      }, 1_000);
    });
    await platform.catalog.stop();
    const worker = await startCatalogProcess({
      SHUTDOWN_TIMEOUT_MS: shutdownTimeoutMs,
      // Longer than the test: a redelivery would have to come from the hand-back.
      CATALOG_INGEST_LEASE_MS: '60000',
    });
    onTestFinished(() => void worker.kill('SIGKILL'));
    await waitUntilServing('catalog', env);
    const statusUrl = await notify(storeId, url);
    await expect.poll(() => requests, { timeout: 15_000 }).toBe(1);
    const exited = new Promise<number | null>((resolve) => worker.once('exit', resolve));
    const stoppedAt = Date.now();
    worker.kill('SIGTERM');
    const code = await exited;
    return { document, statusUrl, code, stoppedInMs: Date.now() - stoppedAt };
  }

  async function activations(storeId: string) {
    return platform.catalogDb
      .selectFrom('catalog_versions')
      .select('version_id')
      .where('store_id', '=', storeId)
      .execute();
  }

  it('finishes the download in flight when SIGTERM comes, and acks it once', async () => {
    const storeId = await newStore();
    const { document, statusUrl, code } = await workerMidDownload(storeId, '10000', false);
    expect(code).toBe(0);
    const run = await platform.catalogDb
      .selectFrom('ingest_runs')
      .select(['status', 'attempts'])
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(run).toEqual({ status: 'succeeded', attempts: 1 });
    expect(await activations(storeId)).toHaveLength(1);
    const consumer = await ingestConsumer();
    expect(consumer.num_ack_pending).toBe(0);
    expect(consumer.num_pending).toBe(0);

    // Nothing comes back to the next worker: the run stays activated once.
    platform.catalog = platform.newCatalogService();
    await platform.catalog.start();
    expect((await status(statusUrl)).status).toBe('succeeded');
    await sleep(500);
    expect(await activations(storeId)).toHaveLength(1);
    expect((await served(storeId)).body).toEqual(document);
  });

  it('hands back a download past its shutdown deadline; the next worker finishes it once', async () => {
    const storeId = await newStore();
    const { document, statusUrl, code, stoppedInMs } = await workerMidDownload(
      storeId,
      '2000',
      true,
    );
    expect(code).toBe(0);
    expect(stoppedInMs).toBeLessThan(4_000);
    expect(await activations(storeId)).toHaveLength(0);

    // Handed back with its lease released: taken at once, not after the 60 s lease.
    platform.catalog = platform.newCatalogService();
    await platform.catalog.start();
    const finished = await waitFor(statusUrl, /succeeded|failed/, 10_000);
    expect(finished.status).toBe('succeeded');
    expect(await activations(storeId)).toHaveLength(1);
    expect((await served(storeId)).body).toEqual(document);
    const run = await platform.catalogDb
      .selectFrom('ingest_runs')
      .select(['attempts', 'lease_owner'])
      .where('store_id', '=', storeId)
      .executeTakeFirstOrThrow();
    expect(run).toEqual({ attempts: 2, lease_owner: null });
  });

  it('re-publishes a run whose work message was never published', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 10 });
    const runId = randomUUID();
    // As if the process died between the insert and the publish, a minute ago.
    await insertRun({
      run_id: runId,
      store_id: storeId,
      partner_id: commerce.partnerId,
      callback_url: host.serveJson(`/${storeId}/orphan`, document),
      status: 'queued',
      created_at: sql<Date>`now() - interval '1 minute'`,
      updated_at: sql<Date>`now() - interval '1 minute'`,
    });
    expect(await platform.catalog.reconcile()).toBeGreaterThanOrEqual(1);
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;
    expect((await waitFor(statusUrl, /succeeded|failed/)).status).toBe('succeeded');
    expect((await served(storeId)).body).toEqual(document);
  });

  it('fails a run that keeps crashing instead of retrying it forever', async () => {
    const storeId = await newStore();
    const runId = randomUUID();
    await insertRun({
      run_id: runId,
      store_id: storeId,
      partner_id: commerce.partnerId,
      callback_url: host.serveJson(`/${storeId}/crashy`, generateCatalogSet({ storeId, items: 5 })),
      status: 'processing',
      // Three earlier claims ended without an outcome (their workers died).
      attempts: 3,
      updated_at: sql<Date>`now() - interval '1 minute'`,
    });
    await platform.catalog.reconcile();
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;
    const failed = await waitFor(statusUrl, /succeeded|failed/);
    expect(failed.status).toBe('failed');
    expect(failed.errors[0].message).toContain(runId);
  });
});

describe('a later notification supersedes queued runs', () => {
  it('fails a store’s still-queued run at notify time, and no worker downloads it', async () => {
    // One run at a time, and a held download takes it: later runs wait in the work queue.
    await replaceCatalog({ CATALOG_INGEST_CONCURRENCY: '1' });
    const blockerId = await newStore();
    const blocker = heldRoute(
      `/${blockerId}/blocker`,
      generateCatalogSet({ storeId: blockerId, items: 10 }),
    );
    const blockerStatus = await notify(blockerId, blocker.url);
    await expect.poll(() => blocker.requests()).toBe(1);

    const storeId = await newStore();
    let firstDownloads = 0;
    const firstUrl = host.route(`/${storeId}/first`, (_request, response) => {
      firstDownloads += 1;
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(generateCatalogSet({ storeId, items: 11, seed: 1 })));
    });
    const firstStatus = await notify(storeId, firstUrl);
    const queued = await status(firstStatus);
    expect(queued.status).toBe('queued');
    const runsBefore = await ingestRuns();

    const second = generateCatalogSet({ storeId, items: 12, seed: 2 });
    const secondStatus = await notify(storeId, host.serveJson(`/${storeId}/second`, second));
    // Failed in the notification's own transaction, before any worker saw either run.
    const superseded = await status(firstStatus);
    expect(superseded).toMatchObject({
      status: 'failed',
      errors: [{ message: expect.stringMatching(/^Superseded by a later notification/), path: '' }],
    });
    expect(Date.parse(superseded.updatedAt)).toBeGreaterThan(Date.parse(queued.updatedAt));
    expect((await status(secondStatus)).status).toBe('queued');
    // Counted when it failed, from its notification.
    expect(growth(runsBefore, await ingestRuns())).toEqual({ superseded: 1 });

    blocker.release();
    expect((await waitFor(secondStatus, /succeeded|failed/)).status).toBe('succeeded');
    expect((await waitFor(blockerStatus, /succeeded|failed/)).status).toBe('succeeded');
    // The superseded run's work message was taken and dropped without a download.
    await expect.poll(ingestStreamMessages).toBe(0);
    expect(firstDownloads).toBe(0);
    expect((await status(firstStatus)).errors).toEqual(superseded.errors);
    expect((await served(storeId)).body).toEqual(second);
  });
});

describe('per-partner cap on runs in progress', () => {
  it('runs one partner’s ingests at most CATALOG_INGEST_MAX_RUNS_PER_PARTNER at a time across replicas, oldest first, while other partners proceed', async () => {
    // Two replicas with two slots each: without the cap all four downloads would start.
    await replaceCatalog({ CATALOG_INGEST_MAX_RUNS_PER_PARTNER: '1' }, 2);
    const partner = await platform.newPartner('commerce');
    const stores: string[] = [];
    for (let i = 0; i < 4; i++) stores.push(await newStore(partner));
    const routes = stores.map((storeId, i) =>
      heldRoute(`/${storeId}/capped`, generateCatalogSet({ storeId, items: 10 + i, seed: i + 1 })),
    );
    const statusUrls: string[] = [];
    for (const [i, storeId] of stores.entries()) {
      statusUrls.push(await notify(storeId, routes[i]!.url, partner));
    }
    const started = () => routes.filter((route) => route.requests() > 0).length;
    const parked = async () =>
      (
        await platform.catalogDb
          .selectFrom('ingest_runs')
          .select('run_id')
          .where('partner_id', '=', partner.partnerId)
          .where('parked_at', 'is not', null)
          .execute()
      ).length;

    await expect.poll(started).toBe(1);
    expect(routes[0]!.requests()).toBe(1);
    await expect.poll(parked).toBe(3);
    for (const statusUrl of statusUrls.slice(1)) {
      expect((await status(statusUrl, partner)).status).toBe('queued');
    }

    // Another partner's run goes through while this partner is at its cap.
    const otherPartner = await platform.newPartner('commerce');
    const otherStore = await newStore(otherPartner);
    const otherStatus = await notify(
      otherStore,
      host.serveJson(`/${otherStore}/free`, generateCatalogSet({ storeId: otherStore, items: 9 })),
      otherPartner,
    );
    expect((await waitFor(otherStatus, /succeeded|failed/, 20_000, otherPartner)).status).toBe(
      'succeeded',
    );
    expect(started()).toBe(1);
    // Waiting runs hold no delivery: only the running one's message awaits its ack.
    const consumer = await ingestConsumer();
    expect(consumer.num_ack_pending).toBe(1);
    expect(consumer.num_pending).toBe(0);

    // Each finished run lets the partner's next (in notification order) start, one at a time.
    for (let step = 0; step < routes.length; step++) {
      await expect.poll(started).toBe(step + 1);
      expect(routes[step]!.requests()).toBe(1);
      await sleep(300);
      expect(started()).toBe(step + 1);
      routes[step]!.release();
      expect((await waitFor(statusUrls[step]!, /succeeded|failed/, 20_000, partner)).status).toBe(
        'succeeded',
      );
    }
    expect(await parked()).toBe(0);
  });

  it('keeps a partner’s waiting runs out of JetStream while they wait: no redelivery, nothing for the reconciler', async () => {
    await replaceCatalog({ CATALOG_INGEST_MAX_RUNS_PER_PARTNER: '1' });
    const partner = await platform.newPartner('commerce');
    const blockerId = await newStore(partner);
    const blocker = heldRoute(
      `/${blockerId}/long`,
      generateCatalogSet({ storeId: blockerId, items: 10 }),
    );
    const blockerStatus = await notify(blockerId, blocker.url, partner);
    await expect.poll(() => blocker.requests()).toBe(1);
    const waiting: { storeId: string; statusUrl: string; document: unknown }[] = [];
    for (let i = 0; i < 5; i++) {
      const storeId = await newStore(partner);
      const document = generateCatalogSet({ storeId, items: 10 + i, seed: i + 1 });
      const statusUrl = await notify(
        storeId,
        host.serveJson(`/${storeId}/waits`, document),
        partner,
      );
      waiting.push({ storeId, statusUrl, document });
    }
    await expect
      .poll(
        async () =>
          (
            await platform.catalogDb
              .selectFrom('ingest_runs')
              .select('run_id')
              .where('partner_id', '=', partner.partnerId)
              .where('parked_at', 'is not', null)
              .execute()
          ).length,
      )
      .toBe(5);

    // Several leases long: a message nak'ed meanwhile would have been redelivered again and
    // again (spending max_deliver), and a queued run this old looked orphaned to the reconciler.
    await sleep(3 * Number(LEASE_MS));
    expect(await platform.catalog.reconcile()).toBe(0);
    const consumer = await ingestConsumer();
    expect(consumer.num_ack_pending).toBe(1);
    expect(consumer.num_redelivered).toBe(0);
    expect(await ingestStreamMessages()).toBe(1);

    blocker.release();
    expect((await waitFor(blockerStatus, /succeeded|failed/, 20_000, partner)).status).toBe(
      'succeeded',
    );
    for (const run of waiting) {
      expect((await waitFor(run.statusUrl, /succeeded|failed/, 20_000, partner)).status).toBe(
        'succeeded',
      );
      expect((await served(run.storeId)).body).toEqual(run.document);
    }
    await expect.poll(ingestStreamMessages).toBe(0);
  });

  it('does not let a fresh notification overtake the partner’s runs already waiting', async () => {
    await replaceCatalog({ CATALOG_INGEST_MAX_RUNS_PER_PARTNER: '1' });
    const partner = await platform.newPartner('commerce');
    const waitingStore = await newStore(partner);
    const waiting = heldRoute(
      `/${waitingStore}/waiting`,
      generateCatalogSet({ storeId: waitingStore, items: 10 }),
    );
    const waitingRunId = randomUUID();
    // Parked a moment ago, and the slot it waited for is free (its release is not due yet).
    await insertRun({
      run_id: waitingRunId,
      store_id: waitingStore,
      partner_id: partner.partnerId,
      callback_url: waiting.url,
      status: 'queued',
      parked_at: sql<Date>`now()`,
      published_at: sql<Date>`now()`,
    });
    const freshStore = await newStore(partner);
    const fresh = heldRoute(
      `/${freshStore}/fresh`,
      generateCatalogSet({ storeId: freshStore, items: 11 }),
    );
    const freshStatus = await notify(freshStore, fresh.url, partner);

    // The fresh run's turn comes after the waiting one's.
    await expect.poll(() => waiting.requests()).toBe(1);
    await sleep(300);
    expect(fresh.requests()).toBe(0);
    expect((await status(freshStatus, partner)).status).toBe('queued');
    waiting.release();
    const waitingStatus = `/v1/commerce/stores/${waitingStore}/catalog-ingest/${waitingRunId}/status`;
    expect((await waitFor(waitingStatus, /succeeded|failed/, 20_000, partner)).status).toBe(
      'succeeded',
    );
    await expect.poll(() => fresh.requests()).toBe(1);
    fresh.release();
    expect((await waitFor(freshStatus, /succeeded|failed/, 20_000, partner)).status).toBe(
      'succeeded',
    );
  });

  it('has the reconciler start a parked run whose release was lost (the worker that freed the slot died)', async () => {
    await replaceCatalog({ CATALOG_INGEST_MAX_RUNS_PER_PARTNER: '1' });
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 10 });
    const runId = randomUUID();
    await insertRun({
      run_id: runId,
      store_id: storeId,
      partner_id: commerce.partnerId,
      callback_url: host.serveJson(`/${storeId}/forgotten`, document),
      status: 'queued',
      parked_at: sql<Date>`now() - interval '1 minute'`,
      published_at: sql<Date>`now() - interval '1 minute'`,
      created_at: sql<Date>`now() - interval '1 minute'`,
      updated_at: sql<Date>`now() - interval '1 minute'`,
    });
    expect(await platform.catalog.reconcile()).toBeGreaterThanOrEqual(1);
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;
    expect((await waitFor(statusUrl, /succeeded|failed/)).status).toBe('succeeded');
    expect((await served(storeId)).body).toEqual(document);
  });
});

describe('the status a partner sees', () => {
  it('keeps showing processing (and its updatedAt) while a second attempt downloads again', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 15 });
    const retry = heldRoute(`/${storeId}/retry`, document);
    const runId = randomUUID();
    // The first attempt's worker died while processing, a minute ago.
    await insertRun({
      run_id: runId,
      store_id: storeId,
      partner_id: commerce.partnerId,
      callback_url: retry.url,
      status: 'processing',
      attempts: 1,
      lease_owner: 'a-worker-that-died',
      lease_expires_at: sql<Date>`now() - interval '50 seconds'`,
      published_at: sql<Date>`now() - interval '1 minute'`,
      processing_at: sql<Date>`now() - interval '1 minute'`,
      created_at: sql<Date>`now() - interval '61 seconds'`,
      updated_at: sql<Date>`now() - interval '1 minute'`,
    });
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;
    const before = await status(statusUrl);
    expect(before.status).toBe('processing');

    await platform.catalog.reconcile();
    await expect.poll(() => retry.requests()).toBe(1);
    // The second attempt is downloading: the partner still sees what it saw.
    expect(await status(statusUrl)).toEqual(before);
    retry.release();
    const done = await waitFor(statusUrl, /succeeded|failed/);
    expect(done.status).toBe('succeeded');
    expect(Date.parse(done.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
    const run = await platform.catalogDb
      .selectFrom('ingest_runs')
      .select('attempts')
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    expect(run.attempts).toBe(2);
  });

  it('shows an activation whose event is pending as processing at the time processing began, and succeeded from the event’s publication', async () => {
    const storeId = await newStore();
    const runId = randomUUID();
    const eventId = randomUUID();
    const processingAt = new Date(Date.now() - 2_000);
    const activatedAt = new Date(Date.now() - 1_000);
    await platform.catalogDb
      .insertInto('outbox')
      .values({
        event_id: eventId,
        // No stream takes this subject: the relay parks it, so it stays pending.
        subject: `${env.prefix}.nowhere.ingest-status`,
        aggregate_type: 'test',
        aggregate_id: eventId,
        aggregate_version: 1,
        payload: JSON.stringify({ id: eventId }),
      })
      .execute();
    await insertRun({
      run_id: runId,
      store_id: storeId,
      partner_id: commerce.partnerId,
      callback_url: `${host.base}/unused`,
      status: 'succeeded',
      attempts: 1,
      summary: JSON.stringify({
        items: 1,
        sections: 1,
        modifierGroups: 0,
        added: 1,
        removed: 0,
        priceChanged: 0,
      }),
      processing_at: processingAt,
      created_at: new Date(Date.now() - 3_000),
      updated_at: activatedAt,
    });
    // Set by activation only (the insert type forbids it).
    await platform.catalogDb
      .updateTable('ingest_runs')
      .set({ activation_event_id: eventId })
      .where('run_id', '=', runId)
      .execute();
    const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;

    const pending = await status(statusUrl);
    expect(pending).toMatchObject({ status: 'processing', updatedAt: processingAt.toISOString() });
    expect(pending).not.toHaveProperty('summary');

    // What the relay does once it has published the event.
    const publishedAt = new Date();
    await platform.catalogDb
      .updateTable('outbox')
      .set({ published_at: publishedAt })
      .where('event_id', '=', eventId)
      .execute();
    const succeeded = await status(statusUrl);
    expect(succeeded).toMatchObject({ status: 'succeeded', updatedAt: publishedAt.toISOString() });
    expect(Date.parse(succeeded.updatedAt)).toBeGreaterThan(activatedAt.getTime());
  });

  it('moves updatedAt with every status change a partner observes, on a success and on a failure', async () => {
    const storeId = await newStore();
    const good = heldRoute(`/${storeId}/observed`, generateCatalogSet({ storeId, items: 3_000 }));
    const bad = heldRoute(`/${storeId}/observed-bad`, {
      ...generateCatalogSet({ storeId, items: 3_000, seed: 2 }),
      currency: 'EUR',
    });
    for (const route of [good, bad]) {
      const statusUrl = await notify(storeId, route.url);
      const seen: { status: string; updatedAt: string }[] = [];
      const observe = async () => {
        const { status: value, updatedAt } = await status(statusUrl);
        const last = seen.at(-1);
        if (!last || last.status !== value || last.updatedAt !== updatedAt)
          seen.push({ status: value, updatedAt });
        return value;
      };
      await expect.poll(observe, { interval: 5 }).toBe('pulling');
      // The run says pulling before its download reaches the host: a release before the
      // request arrives would answer nothing and hold the download until its timeout.
      await expect.poll(() => route.requests()).toBe(1);
      route.release();
      // A bound, not a wait: the 3,000-item pull shares two cores with the other files.
      await expect.poll(observe, { interval: 2, timeout: 45_000 }).toMatch(/succeeded|failed/);
      // No status without a new updatedAt, no updatedAt without a new status, time only forward.
      for (let i = 1; i < seen.length; i++) {
        expect(seen[i]!.status).not.toBe(seen[i - 1]!.status);
        expect(Date.parse(seen[i]!.updatedAt)).toBeGreaterThan(Date.parse(seen[i - 1]!.updatedAt));
      }
      expect(seen.at(-1)!.status).toBe(route === good ? 'succeeded' : 'failed');
    }
  }, 120_000);
});

describe('ingest work off the request loop', () => {
  it('fails a run whose document exhausts a preparation thread’s heap, and keeps ingesting', async () => {
    await replaceCatalog({ CATALOG_INGEST_THREAD_HEAP_MB: '64' });
    const storeId = await newStore();
    const heavy = JSON.stringify(generateCatalogSet({ storeId, items: 60_000 }));
    const statusUrl = await notify(storeId, host.serveJson(`/${storeId}/heavy`, heavy));
    const failed = await waitFor(statusUrl, /succeeded|failed/, 60_000);
    expect(failed.status).toBe('failed');
    expect(failed.errors).toEqual([
      {
        message: expect.stringMatching(/contact support quoting catalogIngestId/),
        path: '',
      },
    ]);
    const light = generateCatalogSet({ storeId, items: 10 });
    const next = await notify(storeId, host.serveJson(`/${storeId}/light`, light));
    expect((await waitFor(next, /succeeded|failed/)).status).toBe('succeeded');
  }, 90_000);

  it('keeps the event loop answering status and catalog.v1.active while it validates a large document', async () => {
    const readerStore = await newStore();
    const readerStatus = await notify(
      readerStore,
      host.serveJson(
        `/${readerStore}/reader`,
        generateCatalogSet({ storeId: readerStore, items: 20 }),
      ),
    );
    expect((await waitFor(readerStatus, /succeeded|failed/)).status).toBe('succeeded');
    const storeId = await newStore();
    // Serialized up front; the object graph is garbage before the measurement starts.
    const body = JSON.stringify(generateCatalogSet({ storeId, items: 40_000 }));
    const large = host.serveJson(`/${storeId}/large`, body);
    const bus = createBusClient(env.nc, {
      prefix: env.prefix,
      timeoutMs: 10_000,
      logger: env.logger,
    });
    const ctx = { requestId: randomUUID() };

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const statusUrl = await notify(storeId, large);
    let answeredWhileProcessing = 0;
    let outcome = '';
    while (!/succeeded|failed/.test(outcome)) {
      const [current, active] = await Promise.all([
        status(statusUrl),
        bus.request(subjects.catalog.active, { storeId: readerStore }, ctx),
      ]);
      expect(active.storeId).toBe(readerStore);
      outcome = current.status;
      if (outcome === 'processing') answeredWhileProcessing += 1;
      await sleep(10);
    }
    delay.disable();
    expect(outcome).toBe('succeeded');
    expect(answeredWhileProcessing).toBeGreaterThanOrEqual(3);
    // The old worker parsed and validated on this loop: it stalled for seconds.
    expect(delay.max / 1e6).toBeLessThan(200);
  }, 60_000);
});

/** The catalog service as its own process, on this file's database and prefix. */
/** A run as the database holds it, written directly (a state some process left behind). */
function insertRun(run: Omit<InsertObject<CatalogDatabase, 'ingest_runs'>, 'currency'>) {
  return platform.catalogDb
    .insertInto('ingest_runs')
    .values({ currency: 'USD', ...run })
    .execute();
}

async function startCatalogProcess(overrides: Record<string, string> = {}): Promise<ChildProcess> {
  const processEnv = {
    CATALOG_FETCH_ALLOW_HTTP: 'true',
    CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
    CATALOG_INGEST_LEASE_MS: LEASE_MS,
    ...overrides,
  };
  // The migration step's part: the ingest consumer's ack wait is this process's lease.
  const topology = jetStreamTopology(env.prefix, {
    ingestLeaseMs: Number(processEnv.CATALOG_INGEST_LEASE_MS),
  });
  await applyJetStreamTopology(await env.nc.jetstreamManager(), topology);
  return startServiceProcess('catalog', env, processEnv);
}
