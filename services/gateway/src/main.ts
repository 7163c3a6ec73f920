import { loadConfig, runService } from '@pcp/service-kit';
import {
  createGatewayService,
  GATEWAY_SCHEMA,
  gatewayEnvSchema,
  gatewayMigrations,
  type GatewayDatabase,
} from './app.js';
import { createRedisClient } from './redis-client.js';

const config = loadConfig(gatewayEnvSchema);

await runService<GatewayDatabase>({
  name: 'gateway',
  version: '0.1.0',
  defaultOpsPort: 9100,
  database: { schema: GATEWAY_SCHEMA, migrations: gatewayMigrations },
  // Its readiness turns false while it drains (balancers take it out before its port closes).
  ownOpsServer: true,
  unreadyDelayMs: config.SHUTDOWN_UNREADY_DELAY_MS,
  create: async ({ nc, db, logger, metrics }) => {
    const redis = createRedisClient(config.REDIS_URL, logger);
    await redis.connect();
    const gateway = createGatewayService({ nc, db, redis, logger, metrics, config });
    // Redis serves only requests: it closes once the last one is answered.
    gateway.app.addHook('onClose', () => Promise.resolve(redis.destroy()));
    return gateway;
  },
});
