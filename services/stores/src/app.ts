import {
  createSubjectService,
  keyringFromEnv,
  type Keyring,
  durables,
  jetStreamTopology,
  startConsumer,
  topologyConsumer,
  type ConsumerLoop,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { storesEnvSchema, type StoresConfig } from './config.js';
import type { StoresDatabase } from './db/store.table.js';
import { catalogActivatedHandler } from './handlers/catalog-activated.consumer.js';
import { discoveryHandlers } from './handlers/discovery.handlers.js';
import { specialHoursHandlers } from './handlers/special-hours.handlers.js';
import { statusHandlers } from './handlers/status.handlers.js';
import { createGazetteerGeocoder, type Geocoder } from './geocoding/geocoder.js';
import { storeHandlers } from './handlers/store.handlers.js';

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
 * The stores service: store profiles and status over NATS, and each store's active
 * CatalogSet from the catalog's activation events.
 */
export function createStoresService(deps: StoresServiceDeps): ServiceInstance {
  const clock = deps.clock ?? (() => new Date());
  const geocoder = deps.geocoder ?? createGazetteerGeocoder();
  const config = deps.config ?? storesEnvSchema.parse({});
  const subjects = createSubjectService(deps, { name: 'stores', version: '0.1.0' }, [
    ...storeHandlers(deps.db, geocoder, clock, {
      keyring: deps.keyring ?? keyringFromEnv(),
      overlapMs: config.STORES_SUBMISSION_SECRET_OVERLAP_MS,
      maxStoresPerPartner: config.STORES_MAX_PER_PARTNER,
    }),
    ...statusHandlers(deps.db, clock),
    ...specialHoursHandlers(deps.db),
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
        ...topologyConsumer(jetStreamTopology(deps.subjectPrefix), durables.storesCatalogActivated),
        js: deps.nc.jetstream(),
        jsm,
        prefix: deps.subjectPrefix,
        concurrency: 4,
        logger: deps.logger,
        metrics: deps.metrics,
        handle: catalogActivatedHandler(deps.db),
      });
    },
    async stop(timeoutMs) {
      await Promise.all([subjects.stop(timeoutMs), consumer?.stop(timeoutMs)]);
    },
    serving: () => subjects.serving(),
  };
}
