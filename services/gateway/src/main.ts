import {
  connectNats,
  createDatabase,
  createLogger,
  createMetrics,
  createShutdown,
  drainNats,
  loadConfig,
  migrateToLatest,
  natsCredentials,
  natsTls,
  startTracing,
} from '@pcp/service-kit';
import {
  createGatewayService,
  GATEWAY_SCHEMA,
  gatewayEnvSchema,
  gatewayMigrations,
  type GatewayDatabase,
} from './app.js';
import { createRedisClient } from './redis-client.js';

/** Marks of the shutdown deadline by which each step is done (see createShutdown). */
const SHUTDOWN_MARKS = { http: 0.6, nats: 0.8, redis: 0.9, database: 0.95 } as const;

const config = loadConfig(gatewayEnvSchema);
const logger = createLogger('gateway', config.LOG_LEVEL);
const shutdown = createShutdown(logger, config.SHUTDOWN_TIMEOUT_MS);

try {
  const tracing = startTracing('gateway');
  shutdown.add('tracing', () => tracing.shutdown());

  const db = createDatabase<GatewayDatabase>({
    url: config.DATABASE_URL,
    schema: GATEWAY_SCHEMA,
    maxConnections: config.DB_POOL_MAX,
    applicationName: 'gateway',
  });
  shutdown.add('database', () => db.destroy(), SHUTDOWN_MARKS.database);
  if (config.MIGRATE_ON_START === 'true' || process.argv.includes('migrate')) {
    await migrateToLatest(db, GATEWAY_SCHEMA, gatewayMigrations);
  }
  if (process.argv.includes('migrate')) {
    await shutdown.run('migrations done');
  } else {
    const redis = createRedisClient(config.REDIS_URL, logger);
    await redis.connect();
    shutdown.add('redis', () => Promise.resolve(redis.destroy()), SHUTDOWN_MARKS.redis);

    const nc = await connectNats({
      url: config.NATS_URL,
      name: 'gateway',
      logger,
      credentials: natsCredentials(config),
      tls: natsTls(config),
    });
    shutdown.add('nats', (timeLeftMs) => drainNats(nc, timeLeftMs), SHUTDOWN_MARKS.nats);

    const gateway = createGatewayService({
      nc,
      db,
      redis,
      logger,
      metrics: createMetrics('gateway', { processMetrics: true }),
      config,
    });
    await gateway.start();
    shutdown.add('http', () => gateway.stop(), SHUTDOWN_MARKS.http);
    shutdown.unreadyFirst(() => gateway.drain(), config.SHUTDOWN_UNREADY_DELAY_MS);
    shutdown.trapSignals();
  }
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  await shutdown.run('start failed');
  process.exit(1);
}
