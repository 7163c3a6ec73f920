import { events } from '@pcp/contracts';
import {
  createBusClient,
  createOutboxRelay,
  createSubjectService,
  ensureEventsStream,
  parseAllowlist,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Subscription } from 'nats';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createCatalogCache } from './catalog/catalog-cache.js';
import type { OrderingConfig } from './config.js';
import type { OrderingDatabase } from './db/ordering.table.js';
import { addressHandlers } from './handlers/address.handlers.js';
import { cartHandlers } from './handlers/cart.handlers.js';
import { orderLifecycleHandlers } from './handlers/order-lifecycle.handlers.js';
import { createOrderEvaluator, orderHandlers } from './handlers/order.handlers.js';
import { createPlacing } from './handlers/place.handlers.js';
import { createStoreSubmitter } from './store-submission/store-submitter.js';

export { orderingEnvSchema, type OrderingConfig } from './config.js';
export { ORDERING_SCHEMA, orderingMigrations } from './db/migrations/index.js';
export type { OrderingDatabase } from './db/ordering.table.js';

export interface OrderingServiceDeps extends ServiceDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly config: OrderingConfig;
  /** Injected so tests can pin time (opening hours, scheduled times). */
  readonly clock?: () => Date;
}

/**
 * The ordering service: the stateless cart helpers, saved addresses, validate and place
 * (idempotent, resumable), and the order lifecycle, whose every change goes out through
 * the outbox.
 */
/** How often expired place keys are settled and deleted. */
const SWEEP_INTERVAL_MS = 60_000;

export function createOrderingService(deps: OrderingServiceDeps): ServiceInstance & {
  /** Settle place keys past their retention now (tests; a timer does it every minute). */
  sweepExpiredPlaces(): Promise<number>;
} {
  const bus = createBusClient(deps.nc, {
    prefix: deps.subjectPrefix,
    timeoutMs: deps.requestTimeoutMs,
    logger: deps.logger,
    metrics: deps.metrics,
  });
  const catalogs = createCatalogCache({
    bus,
    logger: deps.logger,
    maxBytes: deps.config.ORDERING_CATALOG_CACHE_BYTES,
  });
  const { config, db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const js = deps.nc.jetstream();
  const relay = createOutboxRelay({ db, js, logger: deps.logger, metrics: deps.metrics });
  const nudge = () => void relay.nudge();
  const evaluate = createOrderEvaluator({ db, bus, catalogs, clock });
  const placing = createPlacing({
    db,
    bus,
    evaluate,
    submitter: createStoreSubmitter({
      allowHttp: config.ORDERING_SUBMISSION_ALLOW_HTTP === 'true',
      allowlist: parseAllowlist(config.ORDERING_SUBMISSION_ALLOWLIST),
      timeoutMs: config.ORDERING_SUBMISSION_TIMEOUT_MS,
      connectTimeoutMs: config.ORDERING_SUBMISSION_CONNECT_TIMEOUT_MS,
    }),
    clock,
    logger: deps.logger,
    prefix: deps.subjectPrefix,
    nudge,
    holder: `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    leaseMs: config.ORDERING_PLACE_LEASE_MS,
    retentionMs: config.ORDERING_IDEMPOTENCY_RETENTION_MS,
    paymentsTimeoutMs: config.ORDERING_PAYMENTS_TIMEOUT_MS,
    ...(config.ORDERING_FAILPOINT ? { failpoint: config.ORDERING_FAILPOINT } : {}),
  });
  const subjects = createSubjectService(deps, { name: 'ordering', version: '0.1.0' }, [
    ...cartHandlers(catalogs),
    ...addressHandlers(db, bus),
    ...orderHandlers(evaluate),
    ...placing.handlers,
    ...orderLifecycleHandlers({
      db,
      bus,
      clock,
      prefix: deps.subjectPrefix,
      nudge,
      paymentsTimeoutMs: config.ORDERING_PAYMENTS_TIMEOUT_MS,
    }),
  ]);
  let activations: Subscription | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  return {
    sweepExpiredPlaces: () => placing.sweepExpired(),
    async start() {
      await ensureEventsStream(await deps.nc.jetstreamManager(), deps.subjectPrefix);
      await subjects.start();
      relay.start();
      sweeper = setInterval(() => {
        placing.sweepExpired().catch((error: unknown) => {
          deps.logger.warn({ err: error }, 'sweeping expired place keys failed');
        });
      }, SWEEP_INTERVAL_MS);
      // Every replica keeps its own cache, so a plain subscription (no queue group, no
      // durable consumer): a missed event is covered by the cache's short TTL.
      activations = deps.nc.subscribe(`${deps.subjectPrefix}.${events.catalogActivated.subject}`, {
        callback: (error, msg) => {
          if (error) return;
          const event = events.catalogActivated.schema.safeParse(msg.json());
          if (event.success) {
            const { storeId, versionId, activatedAt } = event.data.data;
            catalogs.activated(storeId, versionId, activatedAt, event.data.id);
          }
        },
      });
    },
    async stop(timeoutMs) {
      clearInterval(sweeper);
      activations?.unsubscribe();
      await subjects.stop(timeoutMs);
      await relay.stop();
    },
    serving: () => subjects.serving(),
  };
}
