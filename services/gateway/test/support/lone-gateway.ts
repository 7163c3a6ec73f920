import { createDatabase, createMetrics, loadConfig } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { TestEnvironment } from '@pcp/testing/environment';
import {
  createGatewayService,
  GATEWAY_SCHEMA,
  gatewayEnvSchema,
  type GatewayDatabase,
  type GatewayService,
} from '../../src/app.js';

type GatewayDeps = Parameters<typeof createGatewayService>[0];

/** The gateway's schema of the test's database, connected as the gateway would. */
export function createGatewayDatabase(testEnv: TestEnvironment): Kysely<GatewayDatabase> {
  return createDatabase<GatewayDatabase>({
    url: testEnv.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test-gateway',
  });
}

/**
 * A gateway alone, on the test's subject prefix with no service behind it (an authenticated
 * request that passes auth gets 503), on free local ports; `env` overrides its configuration,
 * `deps` adds the optional dependencies (deprecation marks).
 */
export function createLoneGateway(
  testEnv: TestEnvironment,
  db: Kysely<GatewayDatabase>,
  env: Record<string, string> = {},
  redis: GatewayDeps['redis'] = testEnv.redis,
  logger: GatewayDeps['logger'] = testEnv.logger,
  deps: Pick<GatewayDeps, 'apiDeprecations'> = {},
): GatewayService {
  return createGatewayService({
    ...deps,
    nc: testEnv.nc,
    db,
    redis,
    logger,
    metrics: createMetrics('gateway'),
    config: loadConfig(gatewayEnvSchema, {
      PORT: '0',
      HOST: '127.0.0.1',
      OPS_PORT: '0',
      OPS_HOST: '127.0.0.1',
      NATS_SUBJECT_PREFIX: testEnv.prefix,
      REDIS_KEY_PREFIX: testEnv.redisKeyPrefix,
      ...env,
    }),
  });
}
