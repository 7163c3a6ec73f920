// `npm run bench:ingest`: CatalogSet ingest through gateway → NATS → catalog worker → Postgres,
// with the platform running as separate processes on an isolated database, subject prefix and
// Redis key prefix. For generated documents of each size it reports notify-to-succeeded time
// (median and best of several runs), items/s, the catalog process's peak RSS (VmHWM) and the
// time to GET the served CatalogSet back, then checks the targets of the ingest issue.
// Options: BENCH_SIZES=1000,10000,100000 BENCH_RUNS=3 BENCH_PORT=18081
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { generateCatalogSet } from './lib/catalog-generator.mjs';
import {
  build,
  ensureDependencies,
  ensureServers,
  fail,
  log,
  root,
  serverUrls,
} from './lib/setup.mjs';

const sizes = (process.env.BENCH_SIZES ?? '1000,10000,100000')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const port = Number(process.env.BENCH_PORT ?? 18081);
if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1) {
  fail(new Error('BENCH_SIZES must be positive integers and BENCH_RUNS a positive integer'));
}
/** Poll the ingest status this often. */
const POLL_MS = 25;
/** Give up on one ingest after this long (3 attempts × 30 s lease, plus margin). */
const INGEST_TIMEOUT_MS = 300_000;
const MB = 1024 * 1024;

try {
  ensureDependencies();
  await ensureServers();
  build();
} catch (error) {
  fail(error);
}

const { default: pg } = await import('pg');
const { createClient } = await import('redis');
const { connect: connectNats } = await import('nats');
const id = randomBytes(4).toString('hex');
const database = `pcp_bench_${id}`;
const subjectPrefix = `bench_${id}`;
const adminUrl = new URL(serverUrls.postgres);
adminUrl.pathname = '/postgres';
const databaseUrl = new URL(serverUrls.postgres);
databaseUrl.pathname = `/${database}`;
const env = {
  ...process.env,
  DATABASE_URL: databaseUrl.toString(),
  NATS_SUBJECT_PREFIX: subjectPrefix,
  REDIS_KEY_PREFIX: `bench_${id}:`,
  PORT: String(port),
  HOST: '127.0.0.1',
  OPS_PORT: '0',
  OPS_HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
};
/** The catalog service downloads from the local document server below. */
const catalogEnv = {
  ...env,
  CATALOG_FETCH_ALLOW_HTTP: 'true',
  CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
};

async function withAdmin(query) {
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

/** Pre-serialized documents by path, served with Content-Length. */
const documents = new Map();
const documentServer = createServer((req, res) => {
  const body = documents.get(req.url);
  if (!body) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});

const children = [];
let catalogChild;
/** Set once cleanup begins, so children exiting on SIGTERM are not reported. */
let stopping = false;

async function deleteStreams() {
  const nc = await connectNats({ servers: serverUrls.nats });
  try {
    const jsm = await nc.jetstreamManager();
    const names = [];
    for await (const info of jsm.streams.list()) {
      if (info.config.name.startsWith(`${subjectPrefix}_`)) names.push(info.config.name);
    }
    for (const name of names) await jsm.streams.delete(name);
  } finally {
    await nc.close();
  }
}

async function cleanup() {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) =>
          child.exitCode !== null || child.signalCode !== null
            ? resolve()
            : child.once('exit', resolve),
        ),
    ),
  );
  documentServer.closeAllConnections();
  await new Promise((resolve) => documentServer.close(() => resolve()));
  const steps = [
    ['drop database', () => withAdmin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)],
    [
      'delete Redis keys',
      async () => {
        const redis = createClient({ url: serverUrls.redis });
        await redis.connect();
        for await (const keys of redis.scanIterator({ MATCH: `bench_${id}:*`, COUNT: 500 })) {
          if (keys.length) await redis.del(keys);
        }
        redis.destroy();
      },
    ],
    ['delete JetStream streams', deleteStreams],
  ];
  for (const [name, step] of steps) {
    try {
      await step();
    } catch (error) {
      process.stderr.write(`cleanup: ${name} failed: ${error.stack ?? error}\n`);
      process.exitCode = 1;
    }
  }
}

function admin(...args) {
  const result = spawnSync(
    process.execPath,
    [join(root, 'services/gateway/dist/admin/cli.js'), ...args],
    { env, encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`admin ${args[0]} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1));
}

async function request(method, path, apiKey, body) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** VmRSS and VmHWM (the kernel's high-water mark) of a process, in bytes. */
function memoryOf(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch (error) {
    throw new Error(`cannot read /proc/${pid}/status (has the catalog service exited?)`, {
      cause: error,
    });
  }
  const kB = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kB('VmRSS'), hwm: kB('VmHWM') };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value, digits) => Number(value.toFixed(digits));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * Notify, then poll the status URL until the ingest succeeds; seconds from sending the
 * notification to the first `succeeded` status. Samples the catalog process's VmRSS on
 * every poll into `sampled`.
 */
async function ingest(storeId, callbackUrl, apiKey, sampled) {
  const started = performance.now();
  const accepted = await request(
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    apiKey,
    { callbackUrl },
  );
  for (;;) {
    const status = await request('GET', accepted.statusUrl, apiKey);
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
    sampled.rss = Math.max(sampled.rss, memoryOf(catalogChild.pid).rss);
    await sleep(POLL_MS);
  }
}

/** Time to GET the served CatalogSet in full; then If-None-Match with its ETag. */
async function fetchServed(storeId, apiKey, expectedItems) {
  const url = `http://127.0.0.1:${port}/v1/marketfront/stores/${storeId}/catalogset`;
  const headers = { authorization: `Bearer ${apiKey}` };
  const started = performance.now();
  const response = await fetch(url, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  const seconds = (performance.now() - started) / 1000;
  if (response.status !== 200) {
    throw new Error(`GET ${url}: ${response.status} ${body.toString('utf8', 0, 2000)}`);
  }
  const served = Object.keys(JSON.parse(body.toString('utf8')).items).length;
  if (served !== expectedItems) {
    throw new Error(`GET ${url} served ${served} items, expected ${expectedItems}`);
  }
  const etag = response.headers.get('etag');
  if (!etag) throw new Error(`GET ${url} carried no ETag`);
  const again = await fetch(url, { headers: { ...headers, 'if-none-match': etag } });
  await again.arrayBuffer();
  return { seconds, bytes: body.length, revalidateStatus: again.status };
}

const rows = [];
const results = new Map();

function printReport() {
  if (rows.length === 0) return;
  process.stdout.write(
    '\nCatalogSet ingest: notify → gateway → NATS → catalog worker (download, validate, ' +
      `store) → succeeded; ${runs} run(s) per size\n`,
  );
  console.table(rows);
  const target = (label, size, check) => {
    const result = results.get(size);
    const verdict = !result ? 'not measured' : check(result) ? 'met' : 'NOT MET';
    process.stdout.write(`target: ${label}: ${verdict}\n`);
  };
  target('10k items succeed in under 2 s (median)', 10_000, (r) => r.median < 2);
  target('100k items succeed in under 15 s (median)', 100_000, (r) => r.median < 15);
  target('100k items with catalog peak RSS under 1 GB', 100_000, (r) => r.hwm < 1024 * MB);
}

try {
  await withAdmin(`CREATE DATABASE ${database}`);
  await new Promise((resolve, reject) => {
    documentServer.once('error', reject);
    documentServer.listen(0, '127.0.0.1', resolve);
  });
  const documentBase = `http://127.0.0.1:${documentServer.address().port}`;

  for (const service of ['stores', 'catalog', 'ordering', 'payments', 'gateway']) {
    const child = spawn(process.execPath, [join(root, 'services', service, 'dist', 'main.js')], {
      env: service === 'catalog' ? catalogEnv : env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('exit', (code, signal) => {
      if (!stopping) {
        process.stderr.write(`[bench] ${service} exited early (code ${code}, signal ${signal})\n`);
      }
    });
    children.push(child);
    if (service === 'catalog') catalogChild = child;
  }
  let ready = false;
  for (let i = 0; i < 60 && !ready; i++) {
    await sleep(500);
    ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
  }
  if (!ready) throw new Error('platform did not become ready');

  const commerce = admin('create-partner', '--kind', 'commerce', '--name', 'bench commerce');
  const distribution = admin(
    'create-partner',
    '--kind',
    'distribution',
    '--name',
    'bench distribution',
  );
  admin(
    'set-rate-limits',
    '--partner',
    commerce.partnerId,
    '--writes',
    '100000',
    '--reads',
    '100000',
  );
  admin('set-rate-limits', '--partner', distribution.partnerId, '--reads', '100000');

  const baseline = memoryOf(catalogChild.pid);
  log(
    `catalog baseline: VmRSS ${round(baseline.rss / MB, 1)} MB, ` +
      `VmHWM ${round(baseline.hwm / MB, 1)} MB`,
  );

  for (const size of sizes) {
    const storeId = randomUUID();
    await request('PUT', `/v1/commerce/stores/${storeId}`, commerce.apiKey, {
      name: `Bench Store ${size}`,
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

    // One document per run (same store, a different seed each), serialized before timing.
    log(`${size} items: generating ${runs} document(s)`);
    const paths = [];
    for (let run = 1; run <= runs; run++) {
      const path = `/catalogsets/${size}/${run}.json`;
      const doc = generateCatalogSet({ storeId, items: size, seed: run });
      documents.set(path, Buffer.from(JSON.stringify(doc)));
      paths.push(path);
    }
    const jsonMb = documents.get(paths[0]).length / MB;

    const times = [];
    const sampled = { rss: 0 };
    for (let run = 0; run < runs; run++) {
      const { seconds, summary } = await ingest(
        storeId,
        `${documentBase}${paths[run]}`,
        commerce.apiKey,
        sampled,
      );
      if (summary && summary.items !== size) {
        throw new Error(`ingest of ${size} items reported ${summary.items} items`);
      }
      times.push(seconds);
      log(`${size} items, run ${run + 1}/${runs}: ${round(seconds, 3)} s`);
    }
    const afterIngest = memoryOf(catalogChild.pid);
    const served = await fetchServed(storeId, distribution.apiKey, size);
    const afterGet = memoryOf(catalogChild.pid);
    log(
      `${size} items: catalog VmRSS peak sampled while polling ${round(sampled.rss / MB, 1)} MB, ` +
        `VmHWM after ingests ${round(afterIngest.hwm / MB, 1)} MB, ` +
        `after GET ${round(afterGet.hwm / MB, 1)} MB; GET served ${round(served.bytes / MB, 2)} MB`,
    );
    for (const path of paths) documents.delete(path);

    const med = median(times);
    const best = Math.min(...times);
    results.set(size, { median: med, best, hwm: afterIngest.hwm });
    rows.push({
      size,
      'JSON MB': round(jsonMb, 2),
      'median s': round(med, 3),
      'best s': round(best, 3),
      'items/s (median)': Math.round(size / med),
      'catalog VmHWM MB': round(afterIngest.hwm / MB, 1),
      'GET s': round(served.seconds, 3),
      'If-None-Match': served.revalidateStatus,
    });
    if (served.revalidateStatus !== 304) {
      throw new Error(
        `GET with If-None-Match for ${size} items returned ${served.revalidateStatus}, not 304`,
      );
    }
  }
  log(
    `catalog baseline before the first ingest: VmRSS ${round(baseline.rss / MB, 1)} MB, ` +
      `VmHWM ${round(baseline.hwm / MB, 1)} MB`,
  );
  printReport();
} catch (error) {
  printReport();
  process.stderr.write(`\n${error.stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  stopping = true;
  await cleanup();
}
