import type { ServiceName } from '@pcp/contracts';
import type { Kysely, Migration } from 'kysely';
import type { NatsConnection } from 'nats';
import { z } from 'zod';
import { connectNats, drainNats } from './bus.js';
import {
  baseEnvSchema,
  jetStreamSettings,
  loadConfig,
  natsCredentials,
  type BaseEnv,
  type JetStreamSettings,
} from './config.js';
import { createDatabase, migrateToLatest, pingDatabase } from './database.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, type ServiceMetrics } from './metrics.js';
import { natsReadiness, startOpsServer } from './ops-server.js';
import { createShutdown } from './shutdown.js';
import { startTracing } from './tracing.js';

/** What every service factory receives; tests build the same from their own connections. */
export interface ServiceDeps {
  readonly nc: NatsConnection;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly subjectPrefix: string;
  readonly requestTimeoutMs: number;
  /** Replicas and limits of the streams the service creates (default: one replica). */
  readonly jetstream?: JetStreamSettings;
}

/** What a `createXService(deps)` factory returns. */
export interface ServiceInstance {
  start(): Promise<void>;
  /**
   * Stop taking work, then finish (or hand back) what is in flight within `timeoutMs`, so
   * the NATS drain and the pool close that follow find nothing running.
   */
  stop(timeoutMs?: number): Promise<void>;
  /** False once the service stopped answering its subjects (readiness). */
  serving(): boolean;
}

/**
 * Marks of the shutdown deadline by which each step is done: the service's in-flight work
 * gets most of it, then NATS drains (flushing the acks, naks and replies of that work), then
 * the pool closes. The ops port closes last, so probes and scrapes see the shutdown (readiness
 * 503 once the service stops answering its subjects) instead of a refused connection.
 */
const SHUTDOWN_MARKS = { service: 0.6, nats: 0.85, database: 0.95, opsServer: 1 } as const;

interface ServiceSpec {
  readonly name: ServiceName;
  readonly version: string;
  readonly defaultOpsPort: number;
}

interface DatabaseSpec {
  readonly schema: string;
  readonly migrations: Record<string, Migration>;
}

const serviceEnvSchema = baseEnvSchema.extend({
  OPS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** Local runs migrate at start; Kubernetes runs `main.js migrate` as a Job and sets false. */
  MIGRATE_ON_START: z.enum(['true', 'false']).default('true'),
});

/**
 * Boot a service process: config, logs, tracing, NATS, database and migrations, the
 * service itself, its ops port, and an ordered shutdown on SIGTERM/SIGINT.
 * `main.js migrate` only migrates and exits (the Kubernetes migration Job).
 */
export async function runService<DB>(
  spec: ServiceSpec & {
    database: DatabaseSpec;
    create(deps: ServiceDeps & { db: Kysely<DB> }): ServiceInstance;
  },
): Promise<void>;
export async function runService(
  spec: ServiceSpec & { create(deps: ServiceDeps): ServiceInstance },
): Promise<void>;
export async function runService(
  spec: ServiceSpec & {
    database?: DatabaseSpec;
    create(deps: ServiceDeps & { db?: Kysely<unknown> }): ServiceInstance;
  },
): Promise<void> {
  const config = loadConfig(serviceEnvSchema);
  const logger = createLogger(spec.name, config.LOG_LEVEL);
  const shutdown = createShutdown(logger, config.SHUTDOWN_TIMEOUT_MS);
  try {
    // Ids for every request and log line; exported only when the OTEL_* variables say so.
    const tracing = startTracing(spec.name);
    shutdown.add('tracing', () => tracing.shutdown());

    const db = spec.database ? await openDatabase(spec.database, config, spec.name) : undefined;
    if (db) shutdown.add('database', () => db.destroy(), SHUTDOWN_MARKS.database);
    if (process.argv.includes('migrate')) {
      await shutdown.run('migrations done');
      return;
    }

    const nc = await connectNats({
      url: config.NATS_URL,
      name: spec.name,
      logger,
      credentials: natsCredentials(config),
    });
    shutdown.add('nats', (timeLeftMs) => drainNats(nc, timeLeftMs), SHUTDOWN_MARKS.nats);
    const metrics = createMetrics(spec.name, { processMetrics: true });
    const service = spec.create({
      nc,
      logger,
      metrics,
      subjectPrefix: config.NATS_SUBJECT_PREFIX,
      requestTimeoutMs: config.NATS_REQUEST_TIMEOUT_MS,
      jetstream: jetStreamSettings(config),
      ...(db ? { db } : {}),
    });
    await service.start();
    shutdown.add(spec.name, (timeLeftMs) => service.stop(timeLeftMs), SHUTDOWN_MARKS.service);

    const natsConnected = natsReadiness(nc);
    const ops = await startOpsServer({
      port: config.OPS_PORT ?? spec.defaultOpsPort,
      host: config.OPS_HOST,
      registry: metrics.registry,
      logger,
      readiness: async () => ({
        nats: natsConnected(),
        subjects: service.serving(),
        ...(db ? { database: await pingDatabase(db) } : {}),
      }),
    });
    shutdown.add('ops server', () => ops.close(), SHUTDOWN_MARKS.opsServer);
    shutdown.trapSignals();
    logger.info({ opsPort: ops.port, prefix: config.NATS_SUBJECT_PREFIX }, `${spec.name} started`);
  } catch (error) {
    logger.fatal({ err: error }, 'failed to start');
    await shutdown.run('start failed');
    process.exit(1);
  }
}

async function openDatabase(
  spec: DatabaseSpec,
  config: BaseEnv & z.output<typeof serviceEnvSchema>,
  name: string,
) {
  const db = createDatabase<unknown>({
    url: config.DATABASE_URL,
    schema: spec.schema,
    maxConnections: config.DB_POOL_MAX,
    applicationName: name,
  });
  if (config.MIGRATE_ON_START === 'true' || process.argv.includes('migrate')) {
    await migrateToLatest(db, spec.schema, spec.migrations);
  }
  return db;
}
