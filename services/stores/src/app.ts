import { createSubjectService, type ServiceDeps, type ServiceInstance } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { StoresDatabase } from './db/store.table.js';
import { statusHandlers } from './handlers/status.handlers.js';
import { storeHandlers } from './handlers/store.handlers.js';

export { storesMigrations, STORES_SCHEMA } from './db/migrations/index.js';
export type { StoresDatabase } from './db/store.table.js';

export interface StoresServiceDeps extends ServiceDeps {
  readonly db: Kysely<StoresDatabase>;
  /** Injected so tests can pin time (pauses, and availability later). */
  readonly clock?: () => Date;
}

/** The stores service: store profiles and status, answered over NATS. */
export function createStoresService(deps: StoresServiceDeps): ServiceInstance {
  const clock = deps.clock ?? (() => new Date());
  return createSubjectService(deps, { name: 'stores', version: '0.1.0' }, [
    ...storeHandlers(deps.db, clock),
    ...statusHandlers(deps.db, clock),
  ]);
}
