// The platform as the bench scripts run it: its services as separate processes (as in
// production) on an isolated database, NATS subject prefix and Redis key prefix, so a bench
// neither sees nor leaves behind anything of the dev platform's or another bench's.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { build, ensureDependencies, ensureServers, fail, root, serverUrls } from './setup.mjs';

// Every service, even where a bench touches fewer: the platform is ready once all are.
const SERVICES = ['stores', 'catalog', 'ordering', 'payments', 'gateway'];
/** Poll the ingest status this often. */
const POLL_MS = 25;
/** Give up on one ingest after this long (3 attempts × 30 s lease, plus margin). */
const INGEST_TIMEOUT_MS = 300_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The store profile every bench creates its stores with. */
const storeProfile = (name) => ({
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

export function printTable(title, rows) {
  process.stdout.write(`\n${title}\n`);
  console.table(rows);
}

/** Tables and verdict lines, printed together at the end, or as far as they got on failure. */
export class Report {
  tables = [];
  verdicts = [];

  table(title, rows) {
    this.tables.push({ title, rows });
  }

  print() {
    for (const { title, rows } of this.tables) printTable(title, rows);
    if (this.verdicts.length) process.stdout.write(`\n${this.verdicts.join('\n')}\n`);
    this.tables = [];
    this.verdicts = [];
  }
}

export class BenchPlatform {
  /** Every child process (the services and any a bench adds), by name. */
  children = new Map();
  /** Pre-serialized documents by path, for the catalog service to download (`serveDocuments`). */
  documents = new Map();
  #modules;
  #serveDocuments;
  #keepDatabase;
  #subjectPrefix;
  #redisKeyPrefix;
  #env;
  #documentServer;
  #documentBase;
  #stopping;
  #processorLatencyMs;
  #serviceEnv;

  /**
   * Installs dependencies, starts the local servers and builds, exiting on failure; the
   * platform itself starts only in `run`.
   * `serviceEnv` adds variables to one service's environment, e.g.
   * `{ ordering: { WEBHOOK_ALLOW_HTTP: 'true' } }`.
   * @param {{ port: number, serveDocuments?: boolean, keepDatabase?: boolean, processorLatencyMs?: number, serviceEnv?: Record<string, Record<string, string>> }} options
   */
  static async create(options) {
    try {
      ensureDependencies();
      await ensureServers();
      build();
    } catch (error) {
      fail(error);
    }
    // Imported only now: `npm ci` above may just have installed them.
    const [{ default: pg }, { createClient }, { connect }] = await Promise.all([
      import('pg'),
      import('redis'),
      import('nats'),
    ]);
    return new BenchPlatform(options, { pg, createClient, connectNats: connect });
  }

  constructor(
    { port, serveDocuments = false, keepDatabase = false, processorLatencyMs = 0, serviceEnv = {} },
    modules,
  ) {
    this.port = port;
    // The card processor simulator listens after the services' ops ports.
    this.processorUrl = `http://127.0.0.1:${port + 1 + SERVICES.length}`;
    this.#processorLatencyMs = processorLatencyMs;
    this.#serviceEnv = serviceEnv;
    this.#modules = modules;
    this.#serveDocuments = serveDocuments;
    this.#keepDatabase = keepDatabase;
    const id = randomBytes(4).toString('hex');
    this.database = `pcp_bench_${id}`;
    this.#subjectPrefix = `bench_${id}`;
    this.#redisKeyPrefix = `bench_${id}:`;
    this.databaseUrl = new URL(serverUrls.postgres);
    this.databaseUrl.pathname = `/${this.database}`;
    this.#env = {
      ...process.env,
      DATABASE_URL: this.databaseUrl.toString(),
      NATS_SUBJECT_PREFIX: this.#subjectPrefix,
      REDIS_KEY_PREFIX: this.#redisKeyPrefix,
      PORT: String(port),
      HOST: '127.0.0.1',
      OPS_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PAYMENT_PROCESSOR_URL: this.processorUrl,
    };
    process.once('SIGINT', () => {
      process.stderr.write('\n[bench] interrupted; cleaning up\n');
      this.stop().finally(() => process.exit(130));
    });
  }

  /**
   * Start the platform, run `main`, and clean up whatever happened. A failure calls
   * `onError` first (to print what was measured), then is printed and sets exit code 1.
   */
  async run(main, onError) {
    try {
      await this.#start();
      await main();
    } catch (error) {
      onError?.();
      process.stderr.write(`\n${error.stack ?? error}\n`);
      process.exitCode = 1;
    } finally {
      await this.stop();
    }
  }

  url(path) {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The NATS subject prefix of this platform's services. */
  get subjectPrefix() {
    return this.#subjectPrefix;
  }

  /** A service's ops port (readiness, metrics). */
  opsUrl(service, path) {
    return `http://127.0.0.1:${this.port + 1 + SERVICES.indexOf(service)}${path}`;
  }

  documentUrl(path) {
    return `${this.#documentBase}${path}`;
  }

  /** Spawn a Node process that `stop` terminates; reports it if it exits before then. */
  startChild(name, args, options) {
    const child = spawn(process.execPath, args, options);
    child.once('exit', (code, signal) => {
      if (!this.#stopping) {
        process.stderr.write(`[bench] ${name} exited early (code ${code}, signal ${signal})\n`);
      }
    });
    this.children.set(name, child);
    return child;
  }

  async #start() {
    await this.#adminQuery(`CREATE DATABASE ${this.database}`);
    let catalogEnv = this.#env;
    if (this.#serveDocuments) {
      this.#documentServer = createServer((req, res) => {
        const body = this.documents.get(req.url);
        if (!body) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        res.end(body);
      });
      await new Promise((resolve, reject) => {
        this.#documentServer.once('error', reject);
        this.#documentServer.listen(0, '127.0.0.1', resolve);
      });
      this.#documentBase = `http://127.0.0.1:${this.#documentServer.address().port}`;
      // The catalog service downloads from this server: plain HTTP on loopback.
      catalogEnv = {
        ...this.#env,
        CATALOG_FETCH_ALLOW_HTTP: 'true',
        CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
      };
    }
    // BENCH_NODE_ARGS: Node flags for every service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"
    // (a CPU profile per service, written as it exits) or "--trace-gc".
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    // Each service's ops port (readiness): the ports after the gateway's.
    const opsPorts = SERVICES.map((_service, index) => this.port + 1 + index);
    this.startChild(
      'processor-simulator',
      [join(root, 'services', 'processor-simulator', 'dist', 'main.js')],
      {
        env: {
          ...this.#env,
          PORT: new URL(this.processorUrl).port,
          PROCESSOR_LATENCY_MS: String(this.#processorLatencyMs),
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    SERVICES.forEach((service, index) => {
      const main = join(root, 'services', service, 'dist', 'main.js');
      this.startChild(service, [...nodeArgs, main], {
        env: {
          ...(service === 'catalog' ? catalogEnv : this.#env),
          ...this.#serviceEnv[service],
          OPS_PORT: String(opsPorts[index]),
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
    });
    const readyAt = (url) =>
      fetch(url).then(
        (r) => r.ok,
        () => false,
      );
    const readiness = [
      ...opsPorts.map((opsPort) => `http://127.0.0.1:${opsPort}/health/ready`),
      `${this.processorUrl}/health`,
    ];
    let ready = false;
    for (let i = 0; i < 60 && !ready; i++) {
      await sleep(500);
      ready = (await Promise.all(readiness.map(readyAt))).every(Boolean);
    }
    if (!ready) throw new Error('platform did not become ready');
  }

  /** Terminate the children, then drop what the platform created; safe to call twice. */
  stop() {
    return (this.#stopping ??= this.#cleanUp());
  }

  async #cleanUp() {
    const running = [...this.children.values()];
    for (const child of running) child.kill('SIGTERM');
    await Promise.all(
      running.map(
        (child) =>
          new Promise((resolve) =>
            child.exitCode !== null || child.signalCode !== null
              ? resolve()
              : child.once('exit', resolve),
          ),
      ),
    );
    if (this.#documentServer) {
      this.#documentServer.closeAllConnections();
      await new Promise((resolve) => this.#documentServer.close(() => resolve()));
    }
    const steps = [
      ['delete Redis keys', () => this.#deleteRedisKeys()],
      ['delete JetStream streams', () => this.#deleteStreams()],
    ];
    if (!this.#keepDatabase) {
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
        process.stderr.write(`cleanup: ${name} failed: ${error.stack ?? error}\n`);
        process.exitCode = 1;
      }
    }
  }

  async #adminQuery(query) {
    const adminUrl = new URL(serverUrls.postgres);
    adminUrl.pathname = '/postgres';
    const client = new this.#modules.pg.Client({ connectionString: adminUrl.toString() });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  }

  async #deleteRedisKeys() {
    const redis = this.#modules.createClient({ url: serverUrls.redis });
    await redis.connect();
    for await (const keys of redis.scanIterator({
      MATCH: `${this.#redisKeyPrefix}*`,
      COUNT: 500,
    })) {
      if (keys.length) await redis.del(keys);
    }
    redis.destroy();
  }

  async #deleteStreams() {
    const nc = await this.#modules.connectNats({ servers: serverUrls.nats });
    try {
      const jsm = await nc.jetstreamManager();
      const names = [];
      for await (const info of jsm.streams.list()) {
        if (info.config.name.startsWith(`${this.#subjectPrefix}_`)) names.push(info.config.name);
      }
      for (const name of names) await jsm.streams.delete(name);
    } finally {
      await nc.close();
    }
  }

  /** A connected pg client on the bench database (the caller ends it). */
  async connectDatabase(options = {}) {
    const client = new this.#modules.pg.Client({
      connectionString: this.databaseUrl.toString(),
      ...options,
    });
    await client.connect();
    return client;
  }

  /** Run the gateway's admin CLI against this platform; its last stdout line is JSON. */
  admin(...args) {
    const result = spawnSync(
      process.execPath,
      [join(root, 'services/gateway/dist/admin/cli.js'), ...args],
      { env: this.#env, encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`admin ${args[0]} failed: ${result.stderr}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1));
  }

  /** A commerce and a distribution partner, each `{ partnerId, apiKey }`. */
  createPartners() {
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

  /** @param {Record<string, number>} limits per minute by class, e.g. `{ reads: 100_000 }` */
  setRateLimits(partner, limits) {
    const flags = Object.entries(limits).flatMap(([kind, perMinute]) => [
      `--${kind}`,
      String(perMinute),
    ]);
    this.admin('set-rate-limits', '--partner', partner.partnerId, ...flags);
  }

  /** An authenticated JSON request; throws with the response unless it is 2xx. */
  async request(method, path, apiKey, body) {
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
    return response.json();
  }

  /** Create a store with the bench profile; its id. */
  async createStore(apiKey, name = 'Bench Store', overrides = {}) {
    const storeId = randomUUID();
    await this.request('PUT', `/v1/commerce/stores/${storeId}`, apiKey, {
      ...storeProfile(name),
      ...overrides,
    });
    return storeId;
  }

  /**
   * Notify, then poll the status URL until the ingest succeeds: seconds from sending the
   * notification to the first `succeeded` status, and its summary. `onPoll` runs between polls.
   */
  async ingest(storeId, callbackUrl, apiKey, onPoll) {
    const started = performance.now();
    const accepted = await this.request(
      'POST',
      `/v1/commerce/catalogset-notification?storeId=${storeId}`,
      apiKey,
      { callbackUrl },
    );
    for (;;) {
      const status = await this.request('GET', accepted.statusUrl, apiKey);
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
