// The platform as the bench scripts run it: its services as separate processes (as in
// production) on an isolated database, NATS subject prefix and Redis key prefix, so a bench
// neither sees nor leaves behind anything of the dev platform's or another bench's.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { appendFileSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { build, ensureDependencies, ensureServers, fail, root, serverUrls } from './setup.mjs';

// Every service, even where a bench touches fewer: the platform is ready once all are.
const SERVICES = ['stores', 'catalog', 'ordering', 'payments', 'gateway'];
/**
 * BENCH_REPLICAS: processes of each service. Replica 1 keeps the names and ops ports a
 * single-replica run has; replica k > 1 is `<service>#k`. The gateways share the HTTP port
 * through node:cluster (lib/gateway-cluster.mjs), as Node 20 has no reusePort.
 */
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 1);
if (!Number.isInteger(REPLICAS) || REPLICAS < 1 || REPLICAS > 8) {
  fail(new Error('BENCH_REPLICAS must be an integer from 1 to 8'));
}
/** The bench's name in BENCH_RESULTS_FILE records: bench-cart.mjs → cart. */
const BENCH_NAME =
  process.env.BENCH_NAME ?? basename(process.argv[1] ?? 'bench', '.mjs').replace(/^bench-/, '');
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

/**
 * With BENCH_RESULTS_FILE set (scripts/bench.mjs sets it), append `{ bench, ...record }` to
 * it as one JSON line: what the umbrella run reads back instead of parsing the printout.
 */
export function recordResult(record) {
  const file = process.env.BENCH_RESULTS_FILE;
  if (!file) return;
  appendFileSync(file, `${JSON.stringify({ bench: BENCH_NAME, ...record })}\n`);
}

/** Print a table; also record it (`kind` tells the umbrella run what it is, e.g. 'memory'). */
export function printTable(title, rows, kind = 'table') {
  process.stdout.write(`\n${title}\n`);
  console.table(rows);
  recordResult({ kind, title, rows });
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
    if (this.verdicts.length) {
      process.stdout.write(`\n${this.verdicts.join('\n')}\n`);
      recordResult({ kind: 'verdicts', lines: this.verdicts });
    }
    this.tables = [];
    this.verdicts = [];
  }
}

/** Poll every URL until all answer 2xx; throws after 90 s (a loaded machine starts slowly). */
async function waitReady(urls) {
  const readyAt = (url) =>
    fetch(url).then(
      (r) => r.ok,
      () => false,
    );
  for (let i = 0; i < 180; i++) {
    await sleep(500);
    if ((await Promise.all(urls.map(readyAt))).every(Boolean)) return;
  }
  const waiting = [];
  for (const url of urls) if (!(await readyAt(url))) waiting.push(url);
  throw new Error(`platform did not become ready: ${waiting.join(', ')}`);
}

/** VmRSS and VmHWM of a process in bytes, or undefined once it is gone. */
function memoryOf(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kB = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kB('VmRSS'), hwm: kB('VmHWM') };
}

/** Every process's parent pid, from /proc (pid → ppid). */
function parentPids() {
  const parents = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  return parents;
}

/**
 * The pid listening on a local TCP port: the socket's inode from /proc/net/tcp{,6}, then the
 * process holding it among those whose descriptors this user may read; undefined otherwise.
 */
function pidListeningOn(port) {
  const inodes = new Set();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT; state 0A is LISTEN; the inode is the 10th field.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A') inodes.add(fields[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds;
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${entry}/fd/${fd}`);
        if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) return Number(entry);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
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
  #withServices;

  /**
   * Installs dependencies, starts the local servers and builds, exiting on failure; the
   * platform itself starts only in `run`.
   * `serviceEnv` adds variables to one service's environment, e.g.
   * `{ ordering: { WEBHOOK_ALLOW_HTTP: 'true' } }`. `services: false` starts none of the
   * platform (no database either): for benches of the baselines alone.
   * @param {{ port: number, serveDocuments?: boolean, keepDatabase?: boolean, processorLatencyMs?: number, serviceEnv?: Record<string, Record<string, string>>, services?: boolean }} options
   */
  static async create(options) {
    try {
      ensureDependencies();
      await ensureServers();
      // scripts/bench.mjs builds once for every bench it runs (BENCH_SKIP_BUILD=1).
      if (process.env.BENCH_SKIP_BUILD !== '1') build();
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
    {
      port,
      serveDocuments = false,
      keepDatabase = false,
      processorLatencyMs = 0,
      serviceEnv = {},
      services = true,
    },
    modules,
  ) {
    this.port = port;
    this.replicas = REPLICAS;
    this.#withServices = services;
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

  /** A service's ops port (readiness, metrics): replica 1's. */
  opsUrl(service, path) {
    return this.opsUrls(service, path)[0];
  }

  /** Every replica's ops URL of a service, replica 1's first (to sum their metrics). */
  opsUrls(service, path) {
    const index = SERVICES.indexOf(service);
    if (index < 0) throw new Error(`no service ${service}`);
    return Array.from(
      { length: REPLICAS },
      (_, replica) => `http://127.0.0.1:${this.#opsPort(index, replica + 1)}${path}`,
    );
  }

  /**
   * Replica 1 of the service at `index` on port + 1 + index (as with one replica); the
   * processor simulator next; then replica 2's block of ports, replica 3's, and so on.
   */
  #opsPort(index, replica) {
    return replica === 1
      ? this.port + 1 + index
      : this.port + 2 + SERVICES.length * (replica - 1) + index;
  }

  /**
   * The pids of a child and its replicas (`name`, `name#2`, …) and of their own children
   * (the gateway cluster's workers): what a CPU or memory figure of `name` sums over.
   */
  pidsOf(name) {
    const own = [...this.children]
      .filter(
        ([childName, child]) =>
          (childName === name || childName.startsWith(`${name}#`)) && child.pid,
      )
      .map(([, child]) => child.pid);
    // Only the gateway's cluster (BENCH_REPLICAS > 1) has children: skip the /proc scan
    // otherwise, as some benches ask on every poll.
    if (own.length === 0 || REPLICAS === 1) return own;
    const parents = parentPids();
    const all = [...own];
    for (let i = 0; i < all.length; i++) {
      for (const [pid, parent] of parents) if (parent === all[i]) all.push(pid);
    }
    return all;
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
    if (!this.#withServices) return;
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
    const envOf = (service) => ({
      ...(service === 'catalog' ? catalogEnv : this.#env),
      ...this.#serviceEnv[service],
    });
    const readiness = [`${this.processorUrl}/health`];
    // Replica 1 of each service first: it migrates its schema. The gateway's cluster starts
    // its own later workers once its first listens.
    SERVICES.forEach((service, index) => {
      const main = join(root, 'services', service, 'dist', 'main.js');
      if (service === 'gateway' && REPLICAS > 1) {
        const opsPorts = Array.from({ length: REPLICAS }, (_, r) => this.#opsPort(index, r + 1));
        this.startChild(
          service,
          [join(root, 'scripts', 'lib', 'gateway-cluster.mjs'), main, ...nodeArgs],
          {
            env: { ...envOf(service), GATEWAY_OPS_PORTS: opsPorts.join(',') },
            stdio: ['ignore', 'inherit', 'inherit'],
          },
        );
        readiness.push(...opsPorts.map((port) => `http://127.0.0.1:${port}/health/ready`));
        return;
      }
      this.startChild(service, [...nodeArgs, main], {
        env: { ...envOf(service), OPS_PORT: String(this.#opsPort(index, 1)) },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      readiness.push(`http://127.0.0.1:${this.#opsPort(index, 1)}/health/ready`);
    });
    await waitReady(readiness);
    if (REPLICAS === 1) return;
    // The later replicas skip migrations: the first ran them, and two at once race on
    // creating the migration tables.
    const later = [];
    SERVICES.forEach((service, index) => {
      if (service === 'gateway') return;
      const main = join(root, 'services', service, 'dist', 'main.js');
      for (let replica = 2; replica <= REPLICAS; replica++) {
        const opsPort = this.#opsPort(index, replica);
        this.startChild(`${service}#${replica}`, [...nodeArgs, main], {
          env: { ...envOf(service), OPS_PORT: String(opsPort), MIGRATE_ON_START: 'false' },
          stdio: ['ignore', 'inherit', 'inherit'],
        });
        later.push(`http://127.0.0.1:${opsPort}/health/ready`);
      }
    });
    await waitReady(later);
  }

  /** Terminate the children, then drop what the platform created; safe to call twice. */
  stop() {
    return (this.#stopping ??= this.#cleanUp());
  }

  async #cleanUp() {
    // Before any child ends: its VmHWM goes with it.
    try {
      this.#printPeakMemory();
    } catch (error) {
      process.stderr.write(`peak memory: ${error.stack ?? error}\n`);
    }
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
    const steps = this.#withServices
      ? [
          ['delete Redis keys', () => this.#deleteRedisKeys()],
          ['delete JetStream streams', () => this.#deleteStreams()],
        ]
      : [];
    if (this.#withServices && !this.#keepDatabase) {
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

  /**
   * Peak RSS (VmHWM) of every child still running, of the gateway cluster's workers, of the
   * NATS server (shared: its peak since it started, not this bench's alone) and of this
   * process (the load generator and its worker threads), as one table.
   */
  #printPeakMemory() {
    const MB = 1024 * 1024;
    const rows = [];
    const add = (name, pid) => {
      const memory = memoryOf(pid);
      if (memory) {
        rows.push({
          process: name,
          pid,
          'peak RSS MB': Math.round(memory.hwm / MB),
          'RSS MB at end': Math.round(memory.rss / MB),
        });
      }
    };
    const parents = parentPids();
    for (const [name, child] of this.children) {
      if (child.exitCode !== null || child.signalCode !== null || !child.pid) continue;
      const workers = [...parents]
        .filter(([, parent]) => parent === child.pid)
        .map(([pid]) => pid)
        .sort((a, b) => a - b);
      if (workers.length === 0) {
        add(name, child.pid);
        continue;
      }
      // The gateway's cluster: its workers in the order it forked them, named as replicas.
      workers.forEach((pid, index) => add(index === 0 ? name : `${name}#${index + 1}`, pid));
      add(`${name} (cluster primary)`, child.pid);
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
