import {
  createBusClient,
  createOutboxRelay,
  createLocalSubjects,
  createSubjectService,
  keyringFromEnv,
  tryParseJson,
  type Keyring,
  durables,
  jetStreamTopology,
  startConsumer,
  topologyConsumer,
  type ConsumerLoop,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import { events } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import type { Subscription } from 'nats';
import { storesEnvSchema, type StoresConfig } from './config.js';
import { createStoreRowCache } from './db/store-row-cache.js';
import type { StoresDatabase } from './db/store.table.js';
import { catalogActivatedHandler } from './handlers/catalog-activated.consumer.js';
import { discoveryHandlers } from './handlers/discovery.handlers.js';
import { itemAvailabilityHandlers } from './handlers/item-availability.handlers.js';
import { specialHoursHandlers } from './handlers/special-hours.handlers.js';
import { statusHandlers } from './handlers/status.handlers.js';
import { createGazetteerGeocoder, type Geocoder } from './geocoding/geocoder.js';
import { testResetHandler } from './handlers/test-reset.handlers.js';
import { storeHandlers } from './handlers/store.handlers.js';
import { announceStoreDeletions } from './events/store-deletions.js';
import { createFixtureStoreEvents } from './fixtures/fixture-store-events.js';
import { seedFixtureStores } from './fixtures/fixture-stores.js';

export { storesEnvSchema, type StoresConfig } from './config.js';
export { storesMigrations, STORES_SCHEMA } from './db/migrations/index.js';
export type { StoresDatabase } from './db/store.table.js';
export { rewrapSubmissionSecrets } from './db/store.repository.js';
export type { Geocoder } from './geocoding/geocoder.js';

export interface StoresServiceDeps extends ServiceDeps {
  readonly db: Kysely<StoresDatabase>;
  /** Defaults to the environment schema's defaults. */
  readonly config?: StoresConfig;
  /** Injected so tests can pin time (pauses, opening hours). */
  readonly clock?: () => Date;
  /** Defaults to the offline postal-code gazetteer. */
  readonly geocoder?: Geocoder;
  /** Seals stored secrets; defaults to SECRETS_KEYS (the local key outside production). */
  readonly keyring?: Keyring;
}

/**
 * The stores service: store profiles, status and item availability over NATS, each store's
 * active CatalogSet from the catalog's activation events, and the store events partners
 * subscribe to, published through an outbox.
 */
export function createStoresService(deps: StoresServiceDeps): ServiceInstance {
  const clock = deps.clock ?? (() => new Date());
  const geocoder = deps.geocoder ?? createGazetteerGeocoder();
  const config = deps.config ?? storesEnvSchema.parse({});
  const prefix = deps.subjectPrefix;
  const { db } = deps;
  const keyring = deps.keyring ?? keyringFromEnv();
  const bus = createBusClient(deps.nc, {
    prefix,
    timeoutMs: deps.requestTimeoutMs,
    logger: deps.logger,
    metrics: deps.metrics,
  });
  const relay = createOutboxRelay({
    db,
    js: deps.nc.jetstream(),
    logger: deps.logger,
    metrics: deps.metrics,
  });
  // What the service asks of itself, in-process: its NATS user may not publish to its own
  // subjects.
  const local = createLocalSubjects();
  const storeRows = createStoreRowCache(db, {
    maxBytes: config.STORES_ROW_CACHE_BYTES,
    ttlMs: config.STORES_ROW_CACHE_TTL_MS,
  });
  const bindings = [
    ...storeHandlers(
      db,
      geocoder,
      clock,
      {
        keyring,
        overlapMs: config.STORES_SUBMISSION_SECRET_OVERLAP_MS,
        maxStoresPerPartner: config.STORES_MAX_PER_PARTNER,
      },
      { prefix, relay },
      storeRows,
    ),
    ...statusHandlers({ db, clock, prefix, relay, storeRows }),
    ...itemAvailabilityHandlers({ db, bus, clock, prefix, relay, storeRows }),
    ...specialHoursHandlers(db, clock, { prefix, relay }, storeRows),
    ...discoveryHandlers(db, geocoder, clock, {
      scanCap: config.STORES_DISCOVERY_SCAN_CAP,
    }),
    testResetHandler(db, storeRows, (storeIds) =>
      announceStoreDeletions(deps.nc, prefix, storeIds),
    ),
  ];
  local.bind(bindings);
  const subjects = createSubjectService(deps, { name: 'stores', version: '0.1.0' }, bindings);
  const fixtureEvents = createFixtureStoreEvents({
    db,
    local,
    clock,
    logger: deps.logger,
    intervalMs: config.STORES_FIXTURE_EVENT_INTERVAL_MS,
  });
  let fixtureTicking: NodeJS.Timeout | undefined;
  let fixtureTick: Promise<unknown> | undefined;
  let consumer: ConsumerLoop | undefined;
  let storeChanges: Subscription | undefined;
  return {
    async start() {
      // The platform's own test stores (docs/guide/sandbox.md#fixture-stores), there before any
      // request.
      await seedFixtureStores(db, keyring);
      // Every replica's store events, its own included: another replica's write drops the
      // row here as soon as its event is published. A plain subscription: a missed event is
      // covered by the cache's TTL.
      storeChanges = deps.nc.subscribe(`${prefix}.${events.storeChanged.subject}`, {
        callback: (error, msg) => {
          const event = error
            ? undefined
            : events.storeChanged.schema.safeParse(tryParseJson(msg.data));
          if (event?.success) storeRows.invalidate(event.data.data.storeId);
        },
      });
      await subjects.start();
      const jsm = await deps.nc.jetstreamManager();
      consumer = await startConsumer({
        ...topologyConsumer(jetStreamTopology(deps.subjectPrefix), durables.storesCatalogActivated),
        js: deps.nc.jetstream(),
        jsm,
        prefix: deps.subjectPrefix,
        concurrency: 4,
        logger: deps.logger,
        metrics: deps.metrics,
        handle: catalogActivatedHandler({ db, bus, prefix, relay, storeRows }),
      });
      relay.start();
      fixtureTicking = setInterval(
        () => {
          fixtureTick ??= fixtureEvents
            .tick()
            .catch((error: unknown) =>
              deps.logger.warn({ err: error }, 'a fixture store event failed; tried again'),
            )
            .finally(() => (fixtureTick = undefined));
        },
        Math.min(config.STORES_FIXTURE_EVENT_INTERVAL_MS, 10_000),
      );
    },
    async stop(timeoutMs) {
      clearInterval(fixtureTicking);
      storeChanges?.unsubscribe();
      await fixtureTick;
      await Promise.all([subjects.stop(timeoutMs), consumer?.stop(timeoutMs)]);
      // After the handlers and the consumer: the events they committed are published.
      await relay.stop();
    },
    serving: () => subjects.serving(),
  };
}
