import {
  createBusClient,
  createDatabase,
  type BusClient,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  createStoresService,
  STORES_SCHEMA,
  storesEnvSchema,
  type StoresConfig,
  type StoresDatabase,
} from '../../src/app.js';

/** The stores service in this process on the real servers, and a bus client to call it. */
export interface StoresUnderTest {
  readonly env: TestEnvironment;
  readonly db: Kysely<StoresDatabase>;
  readonly service: ServiceInstance;
  readonly client: BusClient;
  /** Stop the service and close what the test environment opened. */
  stop(): Promise<void>;
}

/**
 * A fresh test environment (its own database and subject prefix) with the stores service
 * started on it; `clock` pins its time, `config` overrides the environment's defaults.
 */
export async function startStoresUnderTest(
  options: { clock?: () => Date; config?: Partial<StoresConfig>; timeoutMs?: number } = {},
): Promise<StoresUnderTest> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const env = await createTestEnvironment();
  const db = createDatabase<StoresDatabase>({
    url: env.databaseUrl,
    schema: STORES_SCHEMA,
    applicationName: 'test',
  });
  const service = createStoresService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('stores'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: timeoutMs,
    db,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.config ? { config: { ...storesEnvSchema.parse({}), ...options.config } } : {}),
  });
  await service.start();
  const client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs, logger: env.logger });
  return {
    env,
    db,
    service,
    client,
    async stop() {
      await service.stop();
      await db.destroy();
      await env.cleanup();
    },
  };
}
