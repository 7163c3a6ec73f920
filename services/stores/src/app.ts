import { events } from '@pcp/contracts';
import {
  createSubjectService,
  ensureEventsStream,
  startConsumer,
  type ConsumerLoop,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { DeliverPolicy } from 'nats';
import { storesEnvSchema, type StoresConfig } from './config.js';
import type { StoresDatabase } from './db/store.table.js';
import { catalogActivatedHandler } from './handlers/catalog-activated.consumer.js';
import { discoveryHandlers } from './handlers/discovery.handlers.js';
import { statusHandlers } from './handlers/status.handlers.js';
import { createGazetteerGeocoder, type Geocoder } from './geocoding/geocoder.js';
import { storeHandlers } from './handlers/store.handlers.js';

export { storesEnvSchema, type StoresConfig } from './config.js';
export { storesMigrations, STORES_SCHEMA } from './db/migrations/index.js';
export type { StoresDatabase } from './db/store.table.js';
export type { Geocoder } from './geocoding/geocoder.js';

export interface StoresServiceDeps extends ServiceDeps {
  readonly db: Kysely<StoresDatabase>;
  /** Defaults to the environment schema's defaults. */
  readonly config?: StoresConfig;
  /** Injected so tests can pin time (pauses, opening hours). */
  readonly clock?: () => Date;
  /** Defaults to the offline postal-code gazetteer. */
  readonly geocoder?: Geocoder;
}

/** Retry delays of an event that failed to apply (the database was unreachable, say). */
const EVENT_BACKOFF_MS = [1_000, 5_000, 30_000, 120_000, 600_000];

/**
 * The stores service: store profiles and status over NATS, and each store's active
 * CatalogSet from the catalog's activation events.
 */
export function createStoresService(deps: StoresServiceDeps): ServiceInstance {
  const clock = deps.clock ?? (() => new Date());
  const geocoder = deps.geocoder ?? createGazetteerGeocoder();
  const config = deps.config ?? storesEnvSchema.parse({});
  const subjects = createSubjectService(deps, { name: 'stores', version: '0.1.0' }, [
    ...storeHandlers(deps.db, geocoder, clock, {
      maxStoresPerPartner: config.STORES_MAX_PER_PARTNER,
    }),
    ...statusHandlers(deps.db, clock),
    ...discoveryHandlers(deps.db, geocoder, clock, {
      scanCap: config.STORES_DISCOVERY_SCAN_CAP,
    }),
  ]);
  let consumer: ConsumerLoop | undefined;
  return {
    async start() {
      await subjects.start();
      const jsm = await deps.nc.jetstreamManager();
      consumer = await startConsumer({
        js: deps.nc.jetstream(),
        jsm,
        prefix: deps.subjectPrefix,
        stream: await ensureEventsStream(jsm, deps.subjectPrefix, deps),
        durable: 'stores-catalog-activated',
        concurrency: 4,
        config: {
          filter_subject: `${deps.subjectPrefix}.${events.catalogActivated.subject}`,
          deliver_policy: DeliverPolicy.All,
        },
        ackWaitMs: 30_000,
        timeoutMs: 10_000,
        backoffMs: EVENT_BACKOFF_MS,
        maxDeliveries: 20,
        logger: deps.logger,
        metrics: deps.metrics,
        jetstream: deps.jetstream,
        handle: catalogActivatedHandler(deps.db),
      });
    },
    async stop(timeoutMs) {
      await Promise.all([subjects.stop(timeoutMs), consumer?.stop(timeoutMs)]);
    },
    serving: () => subjects.serving(),
  };
}
