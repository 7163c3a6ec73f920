// `npm run bench:stores`: store lookups through gateway → NATS → stores → Postgres at fixed
// request rates, with the platform running as separate processes on an isolated database,
// subject prefix and Redis key prefix. Prints p50/p90/p99 latency and throughput per rate.
// Options: BENCH_RATES=200,500,1000 BENCH_SECONDS=15 BENCH_CONNECTIONS=32
import autocannon from 'autocannon';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pacedLoad } from './lib/paced-load.mjs';
import {
  build,
  ensureDependencies,
  ensureServers,
  fail,
  log,
  root,
  serverUrls,
} from './lib/setup.mjs';

const rates = (process.env.BENCH_RATES ?? '200,500,1000').split(',').map(Number);
const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const port = Number(process.env.BENCH_PORT ?? 18080);

try {
  ensureDependencies();
  await ensureServers();
  build();
} catch (error) {
  fail(error);
}

const { default: pg } = await import('pg');
const { createClient } = await import('redis');
const id = randomBytes(4).toString('hex');
const database = `pcp_bench_${id}`;
const adminUrl = new URL(serverUrls.postgres);
adminUrl.pathname = '/postgres';
const databaseUrl = new URL(serverUrls.postgres);
databaseUrl.pathname = `/${database}`;
const env = {
  ...process.env,
  DATABASE_URL: databaseUrl.toString(),
  NATS_SUBJECT_PREFIX: `bench_${id}`,
  REDIS_KEY_PREFIX: `bench_${id}:`,
  PORT: String(port),
  HOST: '127.0.0.1',
  OPS_PORT: '0',
  OPS_HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
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

const children = [];
async function cleanup() {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) =>
          child.exitCode !== null ? resolve() : child.once('exit', resolve),
        ),
    ),
  );
  await withAdmin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  const redis = createClient({ url: serverUrls.redis });
  await redis.connect();
  for await (const keys of redis.scanIterator({ MATCH: `bench_${id}:*`, COUNT: 500 })) {
    if (keys.length) await redis.del(keys);
  }
  redis.destroy();
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

function run(options) {
  return new Promise((resolve, reject) => {
    autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

try {
  await withAdmin(`CREATE DATABASE ${database}`);
  for (const service of ['stores', 'catalog', 'ordering', 'payments', 'gateway']) {
    const child = spawn(process.execPath, [join(root, 'services', service, 'dist', 'main.js')], {
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(child);
  }
  let ready = false;
  for (let i = 0; i < 60 && !ready; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
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
  admin('set-rate-limits', '--partner', distribution.partnerId, '--reads', '1000000');
  const storeId = randomUUID();
  await request('PUT', `/v1/commerce/stores/${storeId}`, commerce.apiKey, {
    name: 'Bench Store',
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
  const target = {
    url: `http://127.0.0.1:${port}/v1/marketfront/stores/${storeId}`,
    headers: { authorization: `Bearer ${distribution.apiKey}` },
  };
  log('warming up');
  await pacedLoad({ ...target, rate: 500, seconds: 5 });

  const rows = [];
  for (const rate of rates) {
    log(`${rate} req/s for ${seconds}s (open loop, evenly spaced)`);
    const result = await pacedLoad({ ...target, rate, seconds });
    rows.push({
      'target req/s': rate,
      'achieved req/s': result.achievedRate,
      'p50 ms': result.p50,
      'p90 ms': result.p90,
      'p99 ms': result.p99,
      'max ms': result.max,
      requests: result.requests,
      'non-2xx': result.non2xx,
      errors: result.errors,
    });
  }
  log(`unthrottled for ${seconds}s with ${connections} connections (peak throughput)`);
  const peak = await run({ ...target, connections, duration: seconds });
  rows.push({
    'target req/s': 'max',
    'achieved req/s': Math.round(peak.requests.average),
    'p50 ms': peak.latency.p50,
    'p90 ms': peak.latency.p90,
    'p99 ms': peak.latency.p99,
    'max ms': peak.latency.max,
    requests: peak.requests.total,
    'non-2xx': peak.non2xx,
    errors: peak.errors + peak.timeouts,
  });
  process.stdout.write('\nGET /v1/marketfront/stores/{id}: gateway → NATS → stores → Postgres\n');
  console.table(rows);
} catch (error) {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
