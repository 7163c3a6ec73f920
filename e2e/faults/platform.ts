import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { PlatformProcess } from '@pcp/contracts';
import { launchPlatform, platformProcesses, processDefinition } from '@pcp/platform';
import type { LaunchedPlatform, Supervisor } from '@pcp/platform';
import { repositoryRoot as root } from '@pcp/service-kit/local-processes';
import { startFaultServers, type FaultServers } from '@pcp/testing/fault-servers';
import type { ReconciliationReport } from '@pcp/payments';
import type { Faults } from '@pcp/processor-simulator';

const REPLICAS = 2;
const PROCESSOR_KEY = 'sk_test_simulator';

/** One authorization as the processor simulator's own ledger has it (`GET /v1/charges`). */
export interface SimulatorCharge {
  id: string;
  /** authorized, declined, voided, captured, partially_refunded or refunded. */
  status: string;
  amount: number;
  currency: string;
  /** What the processor captured and refunded of it (minor units). */
  capturedAmount: number;
  refundedAmount: number;
  idempotencyKey: string;
  /** The payments charge it was authorized for (null when none was sent). */
  reference: string | null;
  createdAt: string;
}

/** Per-process variables over the suite's own (a mutant's flag, say): `{ ordering: {…} }`. */
export type ServiceEnv = Partial<Record<PlatformProcess, Readonly<Record<string, string>>>>;

/**
 * How often the ledger's reconciler runs under the suite's load, and how long a charge must
 * be quiet before it judges it: the suite's defaults (a fault that changes them restores
 * these). The quiet period is longer than payments' own call (the processor's 10 s timeout)
 * and ordering's retry of it (the refund sweeper's first back-off and its interval), as
 * production's minute is: a shorter one lets the reconciler adopt a lost answer before the
 * retry, and hides a retry that would have moved money twice.
 */
export const RECONCILE_INTERVAL_MS = '3000';
export const RECONCILE_QUIET_MS = '20000';

/**
 * Two replicas of every service and the gateway as separate processes from their builds,
 * with the processor simulator, on the suite's own NATS, PostgreSQL and Redis.
 */
export class FaultPlatform {
  private constructor(
    readonly servers: FaultServers,
    private readonly launched: LaunchedPlatform,
    readonly databaseUrl: string,
    private readonly env: Record<string, string>,
    private readonly serviceEnv: ServiceEnv,
  ) {}

  get supervisor(): Supervisor {
    return this.launched.supervisor;
  }

  get gatewayUrls(): readonly string[] {
    return this.launched.gatewayUrls;
  }

  get processorUrl(): string {
    return this.launched.processorUrl;
  }

  /** `serviceEnv`: variables of one service's processes over the suite's (a mutant's flag). */
  static async start(
    log: (line: string) => void,
    serviceEnv: ServiceEnv = {},
  ): Promise<FaultPlatform> {
    for (const { name, entry } of platformProcesses) {
      if (!existsSync(entry)) {
        throw new Error(`services/${name}/dist is missing: build first (npx tsc -b)`);
      }
    }
    const servers = await startFaultServers();
    try {
      log(`servers: ${servers.natsUrl} ${servers.databaseUrl} ${servers.redisUrl}`);
      const admin = new pg.Client({ connectionString: servers.databaseUrl });
      await admin.connect();
      await admin.query('CREATE DATABASE pcp');
      await admin.end();
      const databaseUrl = servers.databaseUrl.replace(/\/postgres$/, '/pcp');
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '',
        NATS_URL: servers.natsUrl,
        DATABASE_URL: databaseUrl,
        REDIS_URL: servers.redisUrl,
        NATS_SUBJECT_PREFIX: 'faults',
        REDIS_KEY_PREFIX: 'faults:',
        HOST: '127.0.0.1',
        OPS_HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        MIGRATE_ON_START: 'false',
        DB_POOL_MAX: '5',
        CATALOG_FETCH_ALLOW_HTTP: 'true',
        CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
        // A replica that dies holding an ingest run or a place key is taken over soon.
        CATALOG_INGEST_LEASE_MS: '5000',
        CATALOG_RECONCILE_INTERVAL_MS: '2000',
        CATALOG_INGEST_MAX_RUNS_PER_PARTNER: '20',
        ORDERING_PLACE_LEASE_MS: '5000',
        // Stores answer within 2 s or their answer is lost; an attempt the store may hold
        // is finished by the sweeper 3 s after its partner gave up.
        ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
        ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.1/32',
        ORDERING_SUBMISSION_TIMEOUT_MS: '2000',
        ORDERING_PLACE_SETTLE_AFTER_MS: '3000',
        ORDERING_PLACE_SWEEP_INTERVAL_MS: '1000',
        // Owed refunds are swept every second. None of the suite's faults (12 s at most) lasts
        // the two minutes that raise a failing one to operators; a refusal for good raises it
        // at once.
        ORDERING_REFUND_SWEEP_INTERVAL_MS: '1000',
        // The ledger's reconciler runs under the load, as in production.
        PAYMENTS_RECONCILE_INTERVAL_MS: RECONCILE_INTERVAL_MS,
        PAYMENTS_RECONCILE_QUIET_MS: RECONCILE_QUIET_MS,
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWLIST: '127.0.0.1/32',
        // Retries within seconds (the contract's schedule runs for hours), and enough of them
        // that a receiver down for a while gets everything once it is back.
        WEBHOOK_RETRY_SCHEDULE_MS: [0, 250, 500, 1000, ...Array<number>(40).fill(2000)].join(','),
        WEBHOOK_BREAKER_RESET_MS: '1000',
        WEBHOOK_POLL_MS: '250',
        PAYMENT_PROCESSOR_API_KEY: PROCESSOR_KEY,
        SANDBOX_PROCESSOR_API_KEY: PROCESSOR_KEY,
      };
      log('migrating, then starting the processes');
      const launched = await launchPlatform({
        replicas: REPLICAS,
        ports: 'free',
        baseEnv: {},
        env,
        serviceEnv: {
          ...serviceEnv,
          // Its ledger kept on disk as in a deployment (the journal on the hot path; a restart
          // by the supervisor forgets nothing), in the suite's folder: stop() removes it, or
          // keeps it with the logs of a run that found a violation.
          'processor-simulator': {
            ...serviceEnv['processor-simulator'],
            PROCESSOR_API_KEY: PROCESSOR_KEY,
            PROCESSOR_DATA_DIR: join(servers.logDir, 'processor-simulator'),
          },
          // Generous: the workload's many orders come from a handful of partners.
          gateway: {
            ...serviceEnv.gateway,
            RATE_LIMIT_WRITES_PER_MIN: '100000',
            RATE_LIMIT_READS_PER_MIN: '100000',
          },
        },
        migrate: 'before',
        // As Kubernetes restarts a pod's container: soon, with a back-off while it keeps dying.
        restart: { firstDelayMs: 250, maxDelayMs: 5_000, crashAtStartMs: 10_000 },
        logs: { dir: servers.logDir },
        instrument: false,
        say: log,
      });
      return new FaultPlatform(
        servers,
        launched,
        databaseUrl,
        {
          ...env,
          PAYMENT_PROCESSOR_URL: launched.processorUrl,
          SANDBOX_PROCESSOR_URL: launched.processorUrl,
        },
        serviceEnv,
      );
    } catch (error) {
      await servers.stop();
      throw error;
    }
  }

  /** The gateway's admin command on this platform; its last stdout line is JSON. */
  admin(...args: string[]): Record<string, string> {
    const result = spawnSync(
      process.execPath,
      [join(root, 'services/gateway/dist/admin/cli.js'), ...args],
      { env: this.env, encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`admin ${args[0]} failed: ${result.stderr}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
  }

  async setProcessorFaults(faults: Partial<Faults>): Promise<void> {
    const response = await fetch(`${this.processorUrl}/_control/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(faults),
    });
    if (!response.ok) throw new Error(`setting processor faults: ${response.status}`);
  }

  /**
   * One reconciliation, as an operator runs it (`main.js admin reconcile` of a payments
   * process on this platform, with payments' own variables), waiting out a run another replica
   * holds. The load has stopped, so it judges every charge however recently it changed (no
   * quiet period).
   */
  async reconcile(): Promise<ReconciliationReport> {
    for (let attempt = 1; ; attempt++) {
      const result = spawnSync(
        process.execPath,
        [processDefinition('payments').entry, 'admin', 'reconcile'],
        {
          env: {
            ...this.env,
            ...this.serviceEnv.payments,
            MIGRATE_ON_START: 'false',
            PAYMENTS_RECONCILE_QUIET_MS: '0',
          },
          encoding: 'utf8',
        },
      );
      if (result.status !== 0) throw new Error(`reconcile failed: ${result.stderr}`);
      const report = JSON.parse(
        result.stdout.trim().split('\n').at(-1) ?? '{}',
      ) as ReconciliationReport;
      if (!report.skipped || attempt === 20) return report;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  async processorCharges(): Promise<SimulatorCharge[]> {
    const response = await fetch(`${this.processorUrl}/v1/charges`, {
      headers: { authorization: `Bearer ${PROCESSOR_KEY}` },
    });
    if (!response.ok) throw new Error(`listing processor charges: ${response.status}`);
    return ((await response.json()) as { charges: SimulatorCharge[] }).charges;
  }

  /** A client on the platform's database, for read-only checks (the caller ends it). */
  async connectDatabase(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    await client.connect();
    return client;
  }

  /** Stop everything; `keepLogs` keeps the processes' and servers' logs in `servers.logDir`. */
  async stop(keepLogs = false): Promise<void> {
    await this.launched.stop();
    await this.servers.stop({ keepLogs });
  }
}
