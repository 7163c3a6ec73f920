// Set-up shared by `npm start` and `npm test`: dependencies, local servers, build.
// Plain Node (no dependencies) because it runs before `npm ci` has.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const dataDir = join(root, '.data');

export const serverUrls = {
  nats: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  postgres: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pcp',
  redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
};

const INSTALL_HINT = 'apt-get update && apt-get install -y nats-server redis-server postgresql';

export function log(message) {
  process.stdout.write(`[setup] ${message}\n`);
}

export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
  }
}

/** `npm ci` when node_modules is missing or older than the lock file. */
export function ensureDependencies() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  log('installing dependencies (npm ci)');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

/** Incremental TypeScript build of every package (fast when nothing changed). */
export function build() {
  log('building (tsc -b)');
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-b']);
}

function hostPort(url, defaultPort) {
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: Number(parsed.port || defaultPort),
  };
}

function answers({ host, port }, timeoutMs = 1_000) {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitUntilAnswers(address, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await answers(address, 250)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

function which(binary, extraDirs = []) {
  const dirs = [
    ...(process.env.PATH ?? '').split(':'),
    '/usr/sbin',
    '/usr/local/sbin',
    ...extraDirs,
  ];
  return dirs.map((dir) => join(dir, binary)).find((path) => existsSync(path));
}

const isLocal = (host) => ['127.0.0.1', 'localhost', '::1'].includes(host);

/** Start a server in the background, detached, logging under .data/. */
function startDetached(name, command, args) {
  mkdirSync(dataDir, { recursive: true });
  const out = openSync(join(dataDir, `${name}.log`), 'a');
  spawn(command, args, { cwd: root, detached: true, stdio: ['ignore', out, out] }).unref();
}

const starters = {
  nats({ host, port }) {
    const binary = which('nats-server');
    if (!binary) return false;
    const store = join(dataDir, 'nats');
    mkdirSync(store, { recursive: true });
    startDetached('nats', binary, ['-a', host, '-p', String(port), '-js', '-sd', store]);
    return true;
  },
  redis({ host, port }) {
    const binary = which('redis-server');
    if (!binary) return false;
    const dir = join(dataDir, 'redis');
    mkdirSync(dir, { recursive: true });
    run(
      binary,
      [
        '--daemonize',
        'yes',
        '--bind',
        host,
        '--port',
        String(port),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    return true;
  },
  postgres({ port }) {
    // Debian's cluster (what apt-get installs); the machines of this project run it with trust auth.
    const ctl = which('pg_ctlcluster');
    if (ctl && existsSync('/etc/postgresql')) {
      const version = readdirSync('/etc/postgresql').sort().at(-1);
      if (version) {
        spawnSync(ctl, ['--skip-systemctl-redirect', version, 'main', 'start'], {
          stdio: 'inherit',
        });
        return true;
      }
    }
    // Otherwise a private cluster under .data (initdb refuses to run as root).
    const binDir = existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .sort()
          .map((v) => join('/usr/lib/postgresql', v, 'bin'))
          .at(-1)
      : undefined;
    const initdb = which('initdb', binDir ? [binDir] : []);
    const pgCtl = which('pg_ctl', binDir ? [binDir] : []);
    if (!initdb || !pgCtl || process.getuid?.() === 0) return false;
    const cluster = join(dataDir, 'postgres');
    if (!existsSync(join(cluster, 'PG_VERSION'))) {
      run(initdb, ['-D', cluster, '-U', 'postgres', '--auth=trust'], { stdio: 'ignore' });
    }
    run(
      pgCtl,
      ['-D', cluster, '-l', join(dataDir, 'postgres.log'), '-o', `-p ${port} -k /tmp`, 'start'],
      { stdio: 'ignore' },
    );
    return true;
  },
};

/**
 * Make sure NATS, PostgreSQL and Redis answer. A local one that does not is started from
 * the binary on this machine; with no binary, say the one command that installs it. With
 * `dockerFallback` (tests), a missing binary is left to the test run's testcontainers path
 * when a Docker engine answers.
 */
export async function ensureServers({ dockerFallback = false } = {}) {
  const defaults = { nats: 4222, postgres: 5432, redis: 6379 };
  for (const name of ['nats', 'postgres', 'redis']) {
    const address = hostPort(serverUrls[name], defaults[name]);
    if (await answers(address)) continue;
    if (!isLocal(address.host)) {
      throw new Error(`${name} at ${serverUrls[name]} does not answer`);
    }
    log(`${name} is not running on ${address.host}:${address.port}; starting it`);
    if (!starters[name](address)) {
      if (dockerFallback && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0) {
        log(`${name} is not installed; the tests will start it in Docker`);
        continue;
      }
      throw new Error(`${name} is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
    }
    if (!(await waitUntilAnswers(address, 30))) {
      throw new Error(`${name} did not start; see ${join(dataDir, `${name}.log`)}`);
    }
  }
}

/** Create the platform's database when it does not exist yet (needs dependencies installed). */
export async function ensureDatabase() {
  const { default: pg } = await import('pg');
  const url = new URL(serverUrls.postgres);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      log(`creating database ${name}`);
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    }
  } finally {
    await client.end();
  }
}

/** Print the error as one readable message and exit non-zero. */
export function fail(error) {
  process.stderr.write(`\n[setup] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
