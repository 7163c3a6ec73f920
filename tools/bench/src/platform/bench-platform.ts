// The platform as the benches run it, on an isolated database, NATS subject prefix and Redis
// key prefix, so a bench neither sees nor leaves behind anything of the dev platform's or
// another bench's; and the partner API calls the benches set up with.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { platformServices, type PlatformProcess } from '@pcp/contracts';
import { launchPlatform, memoryOf, type LaunchedPlatform } from '@pcp/platform';
import { build, ensureDependencies, ensureServers, fail, root, serverUrls } from '@pcp/setup';
import { connect } from 'nats';
import pg from 'pg';
import { createClient } from 'redis';
import { describeError, sleep } from '../helpers.js';
import { printTable, type Row } from '../report.js';
import { pidListeningOn } from './proc.js';

export type Env = Record<string, string | undefined>;

/** Poll the ingest status this often. */
const POLL_MS = 25;
/** Give up on one ingest after this long (3 attempts × 30 s lease, plus margin). */
const INGEST_TIMEOUT_MS = 300_000;

/** The store profile every bench creates its stores with. */
const storeProfile = (name: string) => ({
  name,
  phone: '+13125550100',
  timezone: 'America/Chicago',
  address: {
    address1: '1 Main St',
    city: 'Chicago',
    state: 'IL',
    postalCode: '60601',
    country: 'US',
    latitude: 41.88,
    longitude: -87.62,
  },
  fulfillmentTypes: ['PICKUP', 'DELIVERY_BY_MERCHANT'],
  availability: [{ dayOfWeek: 'Monday', start: '08:00:00', end: '22:00:00' }],
  delivery: { radiusMeters: 5000, fee: 2.99, minimumOrder: 15, etaMinutes: 40 },
  pickup: { etaMinutes: 15 },
  taxRate: 0.0875,
});

export interface Partner {
  partnerId: string;
  apiKey: string;
}

export interface BenchPlatformOptions {
  port: number;
  /** Serve `documents` over HTTP for the catalog service to download. */
  serveDocuments?: boolean;
  keepDatabase?: boolean;
  processorLatencyMs?: number;
  /** Variables added to one service's environment, e.g. `{ ordering: { … } }`. */
  serviceEnv?: Partial<Record<PlatformProcess, Record<string, string>>>;
  /** false: none of the platform (no database either), for the baselines alone. */
  services?: boolean;
  /** With `services` false: the isolated database all the same (the NestJS peer's table). */
  database?: boolean;
  /** Preload the tracing instrumentation as the image does (default false: not its cost). */
  instrument?: boolean;
}

/** BENCH_REPLICAS: processes of each service. */
function replicasFromEnv(): number {
  const replicas = Number(process.env.BENCH_REPLICAS ?? 1);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 8) {
    fail(new Error('BENCH_REPLICAS must be an integer from 1 to 8'));
  }
  return replicas;
}

export class BenchPlatform {
  /** Pre-serialized documents by path, for the catalog service to download. */
  readonly documents = new Map<string, Buffer>();
  readonly port: number;
  readonly replicas: number;
  readonly processorUrl: string;
  readonly database: string;
  readonly databaseUrl: URL;
  /** The NATS subject prefix of this platform's services. */
  readonly subjectPrefix: string;
  /** The platform's processes, once started. */
  #launched: LaunchedPlatform | undefined;
  /** The processes a bench adds (the floors), by name. */
  readonly #children = new Map<string, ChildProcess>();
  readonly #options: BenchPlatformOptions;
  readonly #redisKeyPrefix: string;
  readonly #env: Env;
  #documentServer: Server | undefined;
  #documentBase = '';
  #stopping: Promise<void> | undefined;

  /**
   * Installs dependencies, starts the local servers and builds, exiting on failure; the
   * platform itself starts only in `run`.
   */
  static async create(options: BenchPlatformOptions): Promise<BenchPlatform> {
    try {
      ensureDependencies();
      await ensureServers();
      // The umbrella run builds once for every bench it runs (BENCH_SKIP_BUILD=1).
      if (process.env.BENCH_SKIP_BUILD !== '1') build();
    } catch (error) {
      fail(error);
    }
    return new BenchPlatform(options);
  }

  private constructor(options: BenchPlatformOptions) {
    this.#options = options;
    this.port = options.port;
    this.replicas = replicasFromEnv();
    // The card processor simulator listens after the port of each service.
    this.processorUrl = `http://127.0.0.1:${this.port + 1 + platformServices.length}`;
    const id = randomBytes(4).toString('hex');
    this.database = `pcp_bench_${id}`;
    this.subjectPrefix = `bench_${id}`;
    this.#redisKeyPrefix = `bench_${id}:`;
    this.databaseUrl = new URL(serverUrls.postgres);
    this.databaseUrl.pathname = `/${this.database}`;
    this.#env = {
      ...process.env,
      DATABASE_URL: this.databaseUrl.toString(),
      NATS_SUBJECT_PREFIX: this.subjectPrefix,
      REDIS_KEY_PREFIX: this.#redisKeyPrefix,
      PORT: String(this.port),
      HOST: '127.0.0.1',
      OPS_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PAYMENT_PROCESSOR_URL: this.processorUrl,
      SANDBOX_PROCESSOR_URL: this.processorUrl,
    };
    process.once('SIGINT', () => {
      process.stderr.write('\n[bench] interrupted; cleaning up\n');
      void this.stop().finally(() => process.exit(130));
    });
  }

  /**
   * Start the platform, run `main`, and clean up whatever happened. A failure calls
   * `onError` first (to print what was measured), then is printed and sets exit code 1.
   */
  async run(main: () => Promise<void>, onError?: () => void): Promise<void> {
    try {
      await this.#start();
      await main();
    } catch (error) {
      onError?.();
      process.stderr.write(`\n${describeError(error)}\n`);
      process.exitCode = 1;
    } finally {
      await this.stop();
    }
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Every replica's ops URL of a service, replica 1's first (to sum their metrics). */
  opsUrls(service: PlatformProcess, path: string): string[] {
    return (this.#launched?.opsUrls(service) ?? []).map((url) => `${url}${path}`);
  }

  /**
   * The pids a CPU or memory figure of `name` sums over: a platform process with its replicas
   * and a gateway cluster's workers, or a child the bench added.
   */
  pidsOf(name: string): number[] {
    const own = this.#children.get(name)?.pid;
    return [...(this.#launched?.pidsOf(name) ?? []), ...(own === undefined ? [] : [own])];
  }

  documentUrl(path: string): string {
    return `${this.#documentBase}${path}`;
  }

  /** Spawn a Node process that `stop` terminates; reports it if it exits before then. */
  startChild(name: string, args: string[], options: SpawnOptions): ChildProcess {
    const child = spawn(process.execPath, args, options);
    child.once('exit', (code, signal) => {
      if (!this.#stopping) {
        process.stderr.write(`[bench] ${name} exited early (code ${code}, signal ${signal})\n`);
      }
    });
    this.#children.set(name, child);
    return child;
  }

  async #start(): Promise<void> {
    if (this.#options.services === false && !this.#options.database) return;
    await this.#adminQuery(`CREATE DATABASE ${this.database}`);
    if (this.#options.services === false) return;
    const catalog = { ...this.#options.serviceEnv?.catalog };
    if (this.#options.serveDocuments) {
      this.#documentBase = await this.#serveDocuments();
      // The catalog service downloads from this server: plain HTTP on loopback.
      Object.assign(catalog, {
        CATALOG_FETCH_ALLOW_HTTP: 'true',
        CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
      });
    }
    this.#launched = await launchPlatform({
      ports: 'free',
      gatewayPort: this.port,
      processorPort: Number(new URL(this.processorUrl).port),
      replicas: this.replicas,
      // Several gateways share the public port, as behind a load balancer.
      gatewayCluster: this.replicas > 1,
      env: {
        DATABASE_URL: this.databaseUrl.toString(),
        NATS_SUBJECT_PREFIX: this.subjectPrefix,
        REDIS_KEY_PREFIX: this.#redisKeyPrefix,
        HOST: '127.0.0.1',
        OPS_HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
      },
      serviceEnv: {
        ...this.#options.serviceEnv,
        catalog,
        // In memory (no PROCESSOR_DATA_DIR): it stands in for the card processor, whose own
        // bookkeeping is not the platform's cost.
        'processor-simulator': {
          ...this.#options.serviceEnv?.['processor-simulator'],
          PROCESSOR_LATENCY_MS: String(this.#options.processorLatencyMs ?? 0),
        },
      },
      restart: false,
      logs: 'inherit',
      instrument: this.#options.instrument ?? false,
      // BENCH_NODE_ARGS: Node flags for every service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"
      // (a CPU profile per service, written as it exits) or "--trace-gc".
      nodeFlags: (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
      say: (message) => process.stderr.write(`[bench] ${message}\n`),
      readyTimeoutMs: 90_000,
    });
  }

  async #serveDocuments(): Promise<string> {
    const server = createServer((req, res) => {
      const body = this.documents.get(req.url ?? '');
      if (!body) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
    this.#documentServer = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Terminate the children, then drop what the platform created; safe to call twice. */
  stop(): Promise<void> {
    return (this.#stopping ??= this.#cleanUp());
  }

  async #cleanUp(): Promise<void> {
    // Before any child ends: its VmHWM goes with it.
    try {
      this.#printPeakMemory();
    } catch (error) {
      process.stderr.write(`peak memory: ${describeError(error)}\n`);
    }
    await this.#stopChildren();
    await this.#launched?.stop();
    const server = this.#documentServer;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    const services = this.#options.services !== false;
    const steps: [string, () => Promise<void>][] = services
      ? [
          ['delete Redis keys', () => this.#deleteRedisKeys()],
          ['delete JetStream streams', () => this.#deleteStreams()],
        ]
      : [];
    if ((services || this.#options.database) && !this.#options.keepDatabase) {
      steps.unshift([
        'drop database',
        () => this.#adminQuery(`DROP DATABASE IF EXISTS ${this.database} WITH (FORCE)`),
      ]);
    }
    // Every step is tried, so one failing does not leave the others' leftovers too.
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (error) {
        process.stderr.write(`cleanup: ${name} failed: ${describeError(error)}\n`);
        process.exitCode = 1;
      }
    }
  }

  /**
   * Peak RSS (VmHWM) of every child still running, of the gateway cluster's workers, of the
   * NATS server (shared: its peak since it started, not this bench's alone) and of this
   * process (the load generator and its worker threads), as one table.
   */
  #printPeakMemory(): void {
    const MB = 1024 * 1024;
    const rows: Row[] = [];
    const add = (name: string, pid: number) => {
      const memory = memoryOf(pid);
      if (memory) {
        rows.push({
          process: name,
          pid,
          'peak RSS MB': Math.round(memory.peakRssBytes / MB),
          'RSS MB at end': Math.round(memory.rssBytes / MB),
        });
      }
    };
    for (const { name, pid, peakRssBytes, rssBytes } of this.#launched?.memory() ?? []) {
      rows.push({
        process: name,
        pid,
        'peak RSS MB': Math.round(peakRssBytes / MB),
        'RSS MB at end': Math.round(rssBytes / MB),
      });
    }
    for (const [name, child] of this.#children) {
      if (child.exitCode === null && child.signalCode === null && child.pid) add(name, child.pid);
    }
    const natsPid = pidListeningOn(Number(new URL(serverUrls.nats).port || 4222));
    if (natsPid) add('nats-server (shared; peak since it started)', natsPid);
    rows.push({
      process: 'bench (load generator)',
      pid: process.pid,
      'peak RSS MB': Math.round((process.resourceUsage().maxRSS * 1024) / MB),
      'RSS MB at end': Math.round(process.memoryUsage.rss() / MB),
    });
    printTable('Peak RSS per process (VmHWM)', rows, 'memory');
  }

  /** SIGTERM the bench's own children; resolves once all have exited. */
  async #stopChildren(): Promise<void> {
    const running = [...this.#children.values()];
    for (const child of running) child.kill('SIGTERM');
    await Promise.all(
      running.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else child.once('exit', () => resolve());
          }),
      ),
    );
  }

  async #adminQuery(query: string): Promise<void> {
    const adminUrl = new URL(serverUrls.postgres);
    adminUrl.pathname = '/postgres';
    const client = new pg.Client({ connectionString: adminUrl.toString() });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  }

  async #deleteRedisKeys(): Promise<void> {
    const redis = createClient({ url: serverUrls.redis });
    await redis.connect();
    for await (const keys of redis.scanIterator({
      MATCH: `${this.#redisKeyPrefix}*`,
      COUNT: 500,
    })) {
      if (keys.length) await redis.del(keys);
    }
    redis.destroy();
  }

  async #deleteStreams(): Promise<void> {
    const nc = await connect({ servers: serverUrls.nats });
    try {
      const jsm = await nc.jetstreamManager();
      const names = [];
      for await (const info of jsm.streams.list()) {
        if (info.config.name.startsWith(`${this.subjectPrefix}_`)) names.push(info.config.name);
      }
      for (const name of names) await jsm.streams.delete(name);
    } finally {
      await nc.close();
    }
  }

  /** A connected pg client on the bench database (the caller ends it). */
  async connectDatabase(options: pg.ClientConfig = {}): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.databaseUrl.toString(), ...options });
    await client.connect();
    return client;
  }

  /** Run the gateway's admin CLI against this platform; its last stdout line is JSON. */
  admin(...args: string[]): Partner {
    const result = spawnSync(
      process.execPath,
      [join(root, 'services/gateway/dist/admin/cli.js'), ...args],
      { env: this.#env, encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`admin ${args[0]} failed: ${result.stderr}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '') as Partner;
  }

  /** Vault a test card for `endUserId` through the gateway, as a partner does; its paymentId. */
  async vaultCard(partner: Partner, endUserId: string): Promise<string> {
    const response = await fetch(this.url('/v1/marketfront/payments/cards'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${partner.apiKey}`,
        'content-type': 'application/json',
        'x-end-user-id': endUserId,
      },
      body: JSON.stringify({
        cardNumber: '4242424242424242',
        expMonth: 12,
        expYear: 2035,
        cvc: '123',
        cardholderName: 'Bench User',
      }),
    });
    if (response.status !== 201) {
      throw new Error(`vaulting a card answered ${response.status}: ${await response.text()}`);
    }
    return ((await response.json()) as { paymentId: string }).paymentId;
  }

  /** `count` end users `${prefix}-0…`, each with a card vaulted. */
  async vaultCards(
    partner: Partner,
    count: number,
    prefix: string,
  ): Promise<{ endUserId: string; paymentId: string }[]> {
    const cards = [];
    for (let i = 0; i < count; i++) {
      const endUserId = `${prefix}-${i}`;
      cards.push({ endUserId, paymentId: await this.vaultCard(partner, endUserId) });
    }
    return cards;
  }

  /** A commerce and a distribution partner. */
  createPartners(): { commerce: Partner; distribution: Partner } {
    return {
      commerce: this.admin('create-partner', '--kind', 'commerce', '--name', 'bench commerce'),
      distribution: this.admin(
        'create-partner',
        '--kind',
        'distribution',
        '--name',
        'bench distribution',
      ),
    };
  }

  /** Per-minute limits by class, e.g. `{ reads: 100_000 }`. */
  setRateLimits(partner: Partner, limits: Record<string, number>): void {
    const flags = Object.entries(limits).flatMap(([kind, perMinute]) => [
      `--${kind}`,
      String(perMinute),
    ]);
    this.admin('set-rate-limits', '--partner', partner.partnerId, ...flags);
  }

  /** An authenticated JSON request; throws with the response unless it is 2xx. */
  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    apiKey: string,
    body?: unknown,
  ): Promise<T> {
    const response = await fetch(this.url(path), {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok) {
      throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    }
    return (await response.json()) as T;
  }

  /** Create a store with the bench profile; its id. */
  async createStore(apiKey: string, name = 'Bench Store', overrides: object = {}): Promise<string> {
    const storeId = randomUUID();
    await this.request('PUT', `/v1/commerce/stores/${storeId}`, apiKey, {
      ...storeProfile(name),
      ...overrides,
    });
    return storeId;
  }

  /** Notify a CatalogSet: the 202's body. */
  notify(storeId: string, callbackUrl: string, apiKey: string): Promise<IngestAccepted> {
    return this.request<IngestAccepted>(
      'POST',
      `/v1/commerce/catalogset-notification?storeId=${storeId}`,
      apiKey,
      { callbackUrl },
    );
  }

  /**
   * Notify, then poll the status URL until the ingest succeeds: seconds from sending the
   * notification to the first `succeeded` status, and its summary. `onPoll` runs between polls.
   */
  async ingest(
    storeId: string,
    callbackUrl: string,
    apiKey: string,
    onPoll?: () => void,
  ): Promise<{ seconds: number; summary?: { items: number } }> {
    const started = performance.now();
    const accepted = await this.notify(storeId, callbackUrl, apiKey);
    for (;;) {
      const status = await this.request<IngestStatus>('GET', accepted.statusUrl, apiKey);
      if (status.status === 'succeeded') {
        return { seconds: (performance.now() - started) / 1000, summary: status.summary };
      }
      if (status.status === 'failed') {
        throw new Error(
          `ingest ${accepted.catalogIngestId} of ${callbackUrl} failed:\n` +
            JSON.stringify(status.errors, null, 2),
        );
      }
      if (performance.now() - started > INGEST_TIMEOUT_MS) {
        throw new Error(
          `ingest ${accepted.catalogIngestId} of ${callbackUrl} still ${status.status} after ` +
            `${INGEST_TIMEOUT_MS / 1000} s`,
        );
      }
      onPoll?.();
      await sleep(POLL_MS);
    }
  }
}

export interface IngestAccepted {
  catalogIngestId: string;
  statusUrl: string;
}

export interface IngestStatus {
  status: string;
  summary?: { items: number };
  errors?: unknown;
}
