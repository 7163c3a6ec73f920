import {
  createBusClient,
  createOutboxRelay,
  createSubjectService,
  durables,
  jetStreamTopology,
  parseAllowlist,
  requireStreams,
  startConsumer,
  streamName,
  topologyConsumer,
  type ConsumerLoop,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import { natsStreams } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { CatalogConfig } from './config.js';
import type { CatalogDatabase } from './db/catalog.table.js';
import { DryRunSlots } from './domain/dry-run-slots.js';
import { catalogHandlers } from './handlers/catalog.handlers.js';
import { ingestHandlers } from './handlers/ingest.handlers.js';
import { knownItemsHandlers } from './handlers/known-items.handlers.js';
import { dryRunHandlers } from './handlers/dry-run.handlers.js';
import type { CatalogFetchSettings } from './worker/download-catalog.js';
import { createIngestRunMetrics } from './worker/ingest-metrics.js';
import { testResetHandler } from './handlers/test-reset.handlers.js';
import { createIngestHandler } from './worker/ingest.consumer.js';
import { createCatalogPreparationPool } from './worker/prepare-catalog.pool.js';
import { createReconciler } from './worker/reconciler.js';
import { activateFixtureCatalogs } from './fixtures/fixture-catalogs.js';

/** Until the fixture stores exist (stores seeds them as it starts), asked again this often. */
const FIXTURE_RETRY_MS = 5_000;

export { catalogMigrations, CATALOG_SCHEMA } from './db/migrations/index.js';
export type { CatalogDatabase } from './db/catalog.table.js';
export { catalogEnvSchema, type CatalogConfig } from './config.js';

export interface CatalogServiceDeps extends ServiceDeps {
  readonly db: Kysely<CatalogDatabase>;
  readonly config: CatalogConfig;
}

/**
 * The catalog service: accepts notifications, runs ingests from a JetStream work queue
 * (any number of replicas share it), activates catalogs atomically and serves them.
 */
export function createCatalogService(deps: CatalogServiceDeps): ServiceInstance & {
  /** Publish orphaned runs again now (tests; the timer does it in production). */
  reconcile(): Promise<number>;
  /** Prune finished runs past their retention now (tests; the timer does it in production). */
  pruneRuns(): Promise<number>;
} {
  const { config, logger, nc, db } = deps;
  const prefix = deps.subjectPrefix;
  const js = nc.jetstream();
  const bus = createBusClient(nc, {
    prefix,
    timeoutMs: deps.requestTimeoutMs,
    logger,
    metrics: deps.metrics,
  });
  const relay = createOutboxRelay({ db, js, logger, metrics: deps.metrics });
  const reconciler = createReconciler({
    db,
    js,
    prefix,
    logger,
    intervalMs: config.CATALOG_RECONCILE_INTERVAL_MS,
    staleAfterMs: config.CATALOG_INGEST_LEASE_MS,
    maxRunsPerPartner: config.CATALOG_INGEST_MAX_RUNS_PER_PARTNER,
    runRetentionDays: config.CATALOG_INGEST_RUN_RETENTION_DAYS,
  });
  // Its threads start with the first document, so a service never started holds none.
  const preparation = createCatalogPreparationPool({
    threads: config.CATALOG_INGEST_CONCURRENCY,
    heapMb: config.CATALOG_INGEST_THREAD_HEAP_MB,
    logger,
  });
  const fetchSettings: CatalogFetchSettings = {
    allowHttp: config.CATALOG_FETCH_ALLOW_HTTP === 'true',
    allowlist: parseAllowlist(config.CATALOG_FETCH_ALLOWLIST),
    timeoutMs: config.CATALOG_FETCH_TIMEOUT_MS,
    connectTimeoutMs: config.CATALOG_FETCH_CONNECT_TIMEOUT_MS,
    minRate:
      config.CATALOG_INGEST_MIN_BYTES_PER_SEC > 0
        ? {
            bytesPerSec: config.CATALOG_INGEST_MIN_BYTES_PER_SEC,
            graceMs: config.CATALOG_INGEST_MIN_RATE_GRACE_MS,
          }
        : undefined,
  };
  const ingestRunMetrics = createIngestRunMetrics(deps.metrics.registry);
  const subjects = createSubjectService(deps, { name: 'catalog', version: '0.1.0' }, [
    ...ingestHandlers({
      db,
      bus,
      js,
      prefix,
      logger,
      metrics: ingestRunMetrics,
      maxQueuedPerPartner: config.CATALOG_INGEST_MAX_QUEUED_PER_PARTNER,
    }),
    ...dryRunHandlers({
      db,
      bus,
      preparation,
      fetch: fetchSettings,
      slots: new DryRunSlots({
        perReplica: config.CATALOG_VALIDATION_MAX_IN_PROGRESS,
        perPartner: config.CATALOG_VALIDATION_MAX_PER_PARTNER,
      }),
      logger,
    }),
    ...catalogHandlers(db, { documentCacheBytes: config.CATALOG_DOCUMENT_CACHE_BYTES }),
    ...knownItemsHandlers(db),
    testResetHandler(db),
  ]);
  let consumer: ConsumerLoop | undefined;
  let fixturesRetry: NodeJS.Timeout | undefined;
  let fixtures: Promise<unknown> | undefined;
  let stopping = false;
  const activateFixtures = () => {
    fixtures = activateFixtureCatalogs({ db, bus, relay, prefix, logger }).catch(
      (error: unknown) => {
        logger.debug({ err: error }, 'fixture catalogs not activated yet; trying again');
        if (!stopping) fixturesRetry = setTimeout(activateFixtures, FIXTURE_RETRY_MS);
      },
    );
  };

  return {
    reconcile: () => reconciler.reconcile(),
    pruneRuns: () => reconciler.prune(),
    async start() {
      const jsm = await nc.jetstreamManager();
      const topology = jetStreamTopology(prefix, { ingestLeaseMs: config.CATALOG_INGEST_LEASE_MS });
      // The outbox publishes events; the consumer checks its own stream.
      await requireStreams(jsm, [streamName(prefix, natsStreams.events)]);
      await subjects.start();
      consumer = await startConsumer({
        ...topologyConsumer(topology, durables.catalogIngest),
        js,
        jsm,
        prefix,
        concurrency: config.CATALOG_INGEST_CONCURRENCY,
        logger,
        metrics: deps.metrics,
        handle: createIngestHandler({
          db,
          js,
          relay,
          preparation,
          logger,
          prefix,
          workerId: `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
          leaseMs: config.CATALOG_INGEST_LEASE_MS,
          maxAttempts: config.CATALOG_INGEST_MAX_ATTEMPTS,
          maxRunsPerPartner: config.CATALOG_INGEST_MAX_RUNS_PER_PARTNER,
          fetch: fetchSettings,
          metrics: ingestRunMetrics,
        }),
      });
      relay.start();
      reconciler.start();
      // The fixture stores' bundled catalogs (docs/guide/sandbox.md#fixture-stores), in the
      // background.
      activateFixtures();
    },
    async stop(timeoutMs) {
      stopping = true;
      clearTimeout(fixturesRetry);
      await fixtures;
      await Promise.all([subjects.stop(timeoutMs), consumer?.stop(timeoutMs)]);
      // After the consumer: runs still preparing past its deadline are cut off (their
      // leases lapse and another replica resumes them).
      await preparation.close();
      await reconciler.stop();
      await relay.stop();
    },
    serving: () => subjects.serving(),
  };
}
