import type { NatsUser } from '@pcp/contracts';
import type { Kysely, Migration } from 'kysely';
import type { NatsConnection } from 'nats';
import { pino } from 'pino';
import { z } from 'zod';
import { AdminUsageError, adminUsage, parseAdminCall, type AdminCommands } from './admin.js';
import { connectNats, drainNats } from './nats-connection.js';
import {
  baseEnvSchema,
  jetStreamSettings,
  loadConfig,
  natsCredentials,
  natsTls,
  type BaseEnv,
} from './config.js';
import { createDatabase, migrateToLatest, pingDatabase } from './database.js';
import { createLogger, scrubSecrets, type Logger } from './logger.js';
import { createMetrics, type ServiceMetrics } from './metrics.js';
import { natsReadiness, startOpsServer } from './ops-server.js';
import { createShutdown } from './shutdown.js';
import { startTracing } from './tracing.js';
import { applyJetStreamTopology, DEFAULT_INGEST_LEASE_MS, jetStreamTopology } from './topology.js';

/** What every service factory receives; tests build the same from their own connections. */
export interface ServiceDeps {
  readonly nc: NatsConnection;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly subjectPrefix: string;
  readonly requestTimeoutMs: number;
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
  /**
   * A service behind a load balancer: turn unready at once when shutdown begins, then keep
   * serving for the spec's `unreadyDelayMs` (on SIGTERM) before `stop` (see `unreadyFirst`).
   */
  drain?(): void;
}

/**
 * Marks of the shutdown deadline by which each step is done: the service's in-flight work
 * gets most of it, then NATS drains (flushing the acks, naks and replies of that work), then
 * the pool closes. The ops port closes last, so probes and scrapes see the shutdown (readiness
 * 503 once the service stops answering its subjects) instead of a refused connection.
 */
const SHUTDOWN_MARKS = { service: 0.6, nats: 0.85, database: 0.95, opsServer: 1 } as const;

interface ServiceSpec {
  /** A service, or the gateway (which answers HTTP, not subjects). */
  readonly name: NatsUser;
  readonly version: string;
  readonly defaultOpsPort: number;
  /**
   * It runs JetStream consumers: `main.js jetstream-topology` (and its start, with
   * MIGRATE_ON_START) applies the JetStream topology as the NATS user it connects as.
   */
  readonly jetStream?: boolean;
  /** How long a service with `drain` keeps serving while unready on SIGTERM. */
  readonly unreadyDelayMs?: number;
  /** It serves its own ops port (the gateway: its readiness says when it drains). */
  readonly ownOpsServer?: boolean;
}

interface DatabaseSpec {
  readonly schema: string;
  readonly migrations: Record<string, Migration>;
}

/** The catalog's ingest lease: the ack wait of its consumer, which the topology declares. */
const ingestLeaseSchema = z.coerce
  .number()
  .int()
  .min(1_000)
  .max(3_600_000)
  .default(DEFAULT_INGEST_LEASE_MS);

const serviceEnvSchema = baseEnvSchema.extend({
  OPS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** Local runs migrate at start; Kubernetes runs `main.js migrate` as a Job and sets false. */
  MIGRATE_ON_START: z.enum(['true', 'false']).default('true'),
  CATALOG_INGEST_LEASE_MS: ingestLeaseSchema,
});

/**
 * What `main.js jetstream-topology` reads: NATS and the stream settings. It opens no database,
 * so the production requirements of DATABASE_URL do not apply (the shape without the checks).
 */
const topologyEnvSchema = z.object({
  ...baseEnvSchema.shape,
  CATALOG_INGEST_LEASE_MS: ingestLeaseSchema,
});

type ServiceEnv = BaseEnv & z.output<typeof serviceEnvSchema>;

/**
 * Boot a service process: config, logs, tracing, NATS, database and migrations, the
 * service itself, its ops port, and an ordered shutdown on SIGTERM/SIGINT.
 * `main.js migrate` only migrates and exits (the Kubernetes migration Job).
 * `main.js jetstream-topology` (a `jetStream` service) only applies the JetStream topology, as
 * the NATS user it connects as (the migrator), and exits (the Job's last step).
 * `main.js admin <command> [--options]` runs one of the spec's `admin` commands with the
 * service's database and NATS connection, prints its result as JSON on the last line of
 * stdout and exits: 0, 1 when the command failed, 2 when it was called wrongly.
 */
export async function runService<DB>(
  spec: ServiceSpec & {
    database: DatabaseSpec;
    create(deps: ServiceDeps & { db: Kysely<DB> }): ServiceInstance | Promise<ServiceInstance>;
    /** The operator's commands of `main.js admin` (e.g. the kit's `outboxCommands()`). */
    admin?: AdminCommands<DB>;
  },
): Promise<void>;
export async function runService(
  spec: ServiceSpec & { create(deps: ServiceDeps): ServiceInstance | Promise<ServiceInstance> },
): Promise<void>;
export async function runService(
  spec: ServiceSpec & {
    database?: DatabaseSpec;
    create(
      deps: ServiceDeps & { db?: Kysely<unknown> },
    ): ServiceInstance | Promise<ServiceInstance>;
    admin?: AdminCommands<unknown>;
  },
): Promise<void> {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === 'admin') {
    process.exitCode = await runAdmin(spec, rest);
    return;
  }
  if (mode === 'jetstream-topology') {
    process.exitCode = await applyTopology(spec);
    return;
  }
  const config = loadConfig(serviceEnvSchema);
  const logger = createLogger(spec.name, config.LOG_LEVEL);
  const shutdown = createShutdown(logger, config.SHUTDOWN_TIMEOUT_MS);
  try {
    // Ids for every request and log line; exported only when the OTEL_* variables say so.
    const tracing = startTracing(spec.name);
    shutdown.add('tracing', () => tracing.shutdown());

    const migrateOnly = mode === 'migrate';
    const db = spec.database
      ? await openDatabase(spec.database, config, spec.name, migrateOnly)
      : undefined;
    if (db) shutdown.add('database', () => db.destroy(), SHUTDOWN_MARKS.database);
    if (migrateOnly) {
      await shutdown.run('migrations done');
      return;
    }

    const nc = await connectNats({
      url: config.NATS_URL,
      name: spec.name,
      logger,
      credentials: natsCredentials(config),
      tls: natsTls(config),
    });
    shutdown.add('nats', (timeLeftMs) => drainNats(nc, timeLeftMs), SHUTDOWN_MARKS.nats);
    if (spec.jetStream && config.MIGRATE_ON_START === 'true') {
      await applyJetStreamTopology(await nc.jetstreamManager(), topologyOf(config), logger);
    }
    const metrics = createMetrics(spec.name, { processMetrics: true });
    const service = await spec.create({
      nc,
      logger,
      metrics,
      subjectPrefix: config.NATS_SUBJECT_PREFIX,
      requestTimeoutMs: config.NATS_REQUEST_TIMEOUT_MS,
      ...(db ? { db } : {}),
    });
    await service.start();
    shutdown.add(spec.name, (timeLeftMs) => service.stop(timeLeftMs), SHUTDOWN_MARKS.service);
    if (service.drain) {
      shutdown.unreadyFirst(() => service.drain?.(), spec.unreadyDelayMs ?? 0);
    }
    if (spec.ownOpsServer) {
      shutdown.trapSignals();
      return;
    }

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

/** The topology for a parsed environment. */
function topologyOf(config: z.output<typeof topologyEnvSchema>) {
  return jetStreamTopology(config.NATS_SUBJECT_PREFIX, {
    jetstream: jetStreamSettings(config),
    ingestLeaseMs: config.CATALOG_INGEST_LEASE_MS,
  });
}

/** `main.js jetstream-topology`: apply the topology as this process's NATS user; 0 when done. */
async function applyTopology(spec: ServiceSpec): Promise<number> {
  const config = loadConfig(topologyEnvSchema);
  const logger = createLogger(spec.name, config.LOG_LEVEL);
  let nc: NatsConnection | undefined;
  try {
    if (!spec.jetStream) throw new Error(`${spec.name} runs no JetStream consumer`);
    nc = await connectNats({
      url: config.NATS_URL,
      name: `${spec.name}-topology`,
      logger,
      credentials: natsCredentials(config),
      tls: natsTls(config),
    });
    await applyJetStreamTopology(await nc.jetstreamManager(), topologyOf(config), logger);
    return 0;
  } catch (error) {
    logger.fatal({ err: error }, 'JetStream topology not applied');
    return 1;
  } finally {
    if (nc) await drainNats(nc, config.SHUTDOWN_TIMEOUT_MS);
  }
}

async function openDatabase(
  spec: DatabaseSpec,
  config: ServiceEnv,
  name: string,
  migrate: boolean,
) {
  const db = createDatabase<unknown>({
    url: config.DATABASE_URL,
    schema: spec.schema,
    maxConnections: config.DB_POOL_MAX,
    applicationName: name,
  });
  if (config.MIGRATE_ON_START === 'true' || migrate) {
    await migrateToLatest(db, spec.schema, spec.migrations);
  }
  return db;
}

/**
 * `main.js admin`: one command, its result on stdout, logs on stderr. The pool holds one
 * connection, which fits in the role's budget beside the service's pods (the migration
 * Job's share, free outside a release).
 */
async function runAdmin(
  spec: ServiceSpec & { database?: DatabaseSpec; admin?: AdminCommands<unknown> },
  argv: readonly string[],
): Promise<number> {
  const commands = spec.admin ?? {};
  const config = loadConfig(serviceEnvSchema);
  const name = `${spec.name}-admin`;
  const logger = createLogger(name, config.LOG_LEVEL, pino.destination(2));
  let db: Kysely<unknown> | undefined;
  let nc: NatsConnection | undefined;
  try {
    const { command, args } = parseAdminCall(commands, argv);
    if (!spec.database) throw new Error(`${spec.name} has no database for its admin commands`);
    db = await openDatabase(spec.database, { ...config, DB_POOL_MAX: 1 }, name, false);
    nc = await connectNats({
      url: config.NATS_URL,
      name,
      logger,
      credentials: natsCredentials(config),
      tls: natsTls(config),
    });
    const result = await command.run({
      db,
      nc,
      js: nc.jetstream(),
      jsm: await nc.jetstreamManager(),
      logger,
      config,
      prefix: config.NATS_SUBJECT_PREFIX,
      args,
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof AdminUsageError) {
      process.stderr.write(`${error.message}\n${adminUsage(spec.name, commands)}\n`);
      return 2;
    }
    // A migration's or a connection's error says what failed; its cause says why.
    const message = [error, (error as { cause?: unknown }).cause]
      .filter((part) => part !== undefined)
      .map((part) => (part instanceof Error ? part.message : JSON.stringify(part)))
      .join(': ');
    process.stderr.write(`${name}: ${scrubSecrets(message)}\n`);
    return 1;
  } finally {
    if (nc) await drainNats(nc, config.SHUTDOWN_TIMEOUT_MS);
    await db?.destroy();
  }
}
