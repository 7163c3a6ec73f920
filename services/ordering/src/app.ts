import { events } from '@pcp/contracts';
import {
  createBusClient,
  createSubjectService,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Subscription } from 'nats';
import { createCatalogCache } from './catalog/catalog-cache.js';
import type { OrderingConfig } from './config.js';
import type { OrderingDatabase } from './db/ordering.table.js';
import { addressHandlers } from './handlers/address.handlers.js';
import { cartHandlers } from './handlers/cart.handlers.js';
import { orderHandlers } from './handlers/order.handlers.js';

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
 * The ordering service: the stateless cart helpers and order validation, on the pricing
 * engine that place will share.
 */
export function createOrderingService(deps: OrderingServiceDeps): ServiceInstance {
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
  const subjects = createSubjectService(deps, { name: 'ordering', version: '0.1.0' }, [
    ...cartHandlers(catalogs),
    ...addressHandlers(deps.db, bus),
    ...orderHandlers({ db: deps.db, bus, catalogs, clock: deps.clock ?? (() => new Date()) }),
  ]);
  let activations: Subscription | undefined;
  return {
    async start() {
      await subjects.start();
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
      activations?.unsubscribe();
      await subjects.stop(timeoutMs);
    },
    serving: () => subjects.serving(),
  };
}
