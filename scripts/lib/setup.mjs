// Set-up shared by `npm start` and `npm test`: dependencies, local servers, build.
// Plain Node: it runs before `npm ci` has (only the checks after ensureDependencies import
// `pg` and `nats`).
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const dataDir = join(root, '.data');

const envNames = { nats: 'NATS_URL', postgres: 'DATABASE_URL', redis: 'REDIS_URL' };
const defaultUrls = {
  nats: 'nats://127.0.0.1:4222',
  postgres: 'postgres://postgres@127.0.0.1:5432/pcp',
  redis: 'redis://127.0.0.1:6379',
};

// Where the default server refuses this project (a fresh Debian cluster asks for passwords
// over TCP; a NATS may run without JetStream), the set-up runs the project's own under .data/
// on another port, and records that port in the server's config there.
// As root, PostgreSQL runs as the postgres user, who cannot reach a checkout inside a private
// folder (`mktemp -d` makes them 0700): the cluster then lives in the system's temp folder,
// named after the checkout, so every command of this checkout finds the same one.
const ownPostgresPlaces = [
  join(dataDir, 'postgres'),
  join(tmpdir(), `pcp-postgres-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`),
];
/** The project's own cluster, when an earlier set-up made one. */
const existingOwnPostgresDir = () =>
  ownPostgresPlaces.find((dir) => existsSync(join(dir, 'PG_VERSION')));
const OWN_POSTGRES_MARK = "# this project's own cluster, made by npm start and npm test";
const ownNatsDir = join(dataDir, 'nats');
const ownNatsConfig = join(ownNatsDir, 'nats.conf');

/** The port of the project's own server, when an earlier set-up made one. */
function ownServerPort(name) {
  const [file, pattern] =
    name === 'postgres'
      ? [
          join(existingOwnPostgresDir() ?? ownPostgresPlaces[0], 'postgresql.conf'),
          new RegExp(`^${OWN_POSTGRES_MARK}\\nport = (\\d+)$`, 'm'),
        ]
      : [ownNatsConfig, /^listen: "127\.0\.0\.1:(\d+)"$/m];
  if (!existsSync(file)) return undefined;
  const port = pattern.exec(readFileSync(file, 'utf8'))?.[1];
  return port ? Number(port) : undefined;
}

function ownServerUrl(name, port) {
  const url = new URL(defaultUrls[name]);
  url.port = String(port);
  return url.toString();
}

/**
 * Whose URL each server has: `user` (its variable is set), `own` (the project's own server,
 * made by an earlier set-up) or `default`. The own servers' URLs go into the environment here,
 * so every command that imports this file and every child process (services, vitest, the
 * admin command the demo runs) uses them.
 */
const origins = {};
for (const name of ['nats', 'postgres']) {
  const ownPort = ownServerPort(name);
  const ownUrl = ownPort ? ownServerUrl(name, ownPort) : undefined;
  // A command started by another (smoke.mjs starts `npm start`) inherits the own URL.
  if (process.env[envNames[name]] && process.env[envNames[name]] !== ownUrl) {
    origins[name] = 'user';
  } else if (ownUrl) {
    origins[name] = 'own';
    process.env[envNames[name]] = ownUrl;
  } else origins[name] = 'default';
}
origins.redis = process.env.REDIS_URL ? 'user' : 'default';

export const serverUrls = {
  nats: process.env.NATS_URL ?? defaultUrls.nats,
  postgres: process.env.DATABASE_URL ?? defaultUrls.postgres,
  redis: process.env.REDIS_URL ?? defaultUrls.redis,
};

/** From now on this process and its children use `url` for the server. */
function useServer(name, url) {
  serverUrls[name] = url;
  process.env[envNames[name]] = url;
}

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

const PROMTOOL_INSTALL = 'apt-get install -y --no-install-recommends prometheus';

/**
 * promtool (Debian's `prometheus` package), which the alert rule and dashboard tests run:
 * installed with apt-get where this is root on Debian, else a failure naming the command.
 */
export function ensurePromtool() {
  if (which('promtool')) return;
  const canInstall = process.getuid?.() === 0 && which('apt-get');
  if (!canInstall) {
    throw new Error(
      `promtool is not installed (the alert rule tests run it). Install it with:\n  ${PROMTOOL_INSTALL}`,
    );
  }
  log('installing prometheus (promtool, for the alert rule tests)');
  const quiet = {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  };
  run('apt-get', ['update', '-qq'], quiet);
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'prometheus'], quiet);
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

export async function waitUntilAnswers(address, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await answers(address, 250)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** The first port from `from` on that nothing listens on at 127.0.0.1. */
async function firstFreePort(from) {
  const free = (port) =>
    new Promise((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (let port = from; port < from + 100; port++) {
    if ((await free(port)) && !(await answers({ host: '127.0.0.1', port }))) return port;
  }
  throw new Error(`no free port between ${from} and ${from + 99} on 127.0.0.1`);
}

export function which(binary) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin'];
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
    // Debian's cluster (what apt-get installs) when it serves this port; whether it lets us in
    // is checked next.
    const ctl = which('pg_ctlcluster');
    if (!ctl || !existsSync('/etc/postgresql')) return false;
    const version = readdirSync('/etc/postgresql')
      .sort((a, b) => Number(a) - Number(b))
      .at(-1);
    const config = join('/etc/postgresql', version ?? '', 'main', 'postgresql.conf');
    if (!version || !existsSync(config)) return false;
    const mainPort = /^\s*port\s*=\s*(\d+)/m.exec(readFileSync(config, 'utf8'))?.[1] ?? '5432';
    if (Number(mainPort) !== port) return false;
    spawnSync(ctl, ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'inherit' });
    return true;
  },
};

/**
 * Why the server at `url` will not serve the platform, or undefined when it will:
 * PostgreSQL must let the URL's role in; NATS must have JetStream.
 */
const refusals = {
  async postgres(url) {
    const { default: pg } = await import('pg');
    const admin = new URL(url);
    admin.pathname = '/postgres';
    for (let attempt = 0; ; attempt++) {
      const client = new pg.Client({
        connectionString: admin.toString(),
        connectionTimeoutMillis: 5_000,
      });
      try {
        await client.connect();
        await client.end();
        return undefined;
      } catch (error) {
        // A refusal pg raises itself (no password to give) leaves the socket open.
        await client.end().catch(() => undefined);
        // 57P03: a server just started is still recovering.
        if (error.code === '57P03' && attempt < 60) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          continue;
        }
        // 28xxx: no such role, no pg_hba.conf line, wrong password; pg says it needs one.
        if (String(error.code).startsWith('28') || /password/i.test(error.message)) {
          return `refuses the connection (${error.message})`;
        }
        throw new Error(`postgres at ${url}: ${error.message}`);
      }
    }
  },
  async nats(url) {
    const { connect: connectNats } = await import('nats');
    let nc;
    try {
      nc = await connectNats({ servers: url, name: 'pcp-setup', timeout: 3_000 });
    } catch (error) {
      return `refuses the connection (${error.message})`;
    }
    try {
      await nc.jetstreamManager({ timeout: 3_000 });
      return undefined;
    } catch (error) {
      // 503: no responders, nothing serves the JetStream API.
      return error.code === '503'
        ? 'runs without JetStream'
        : `runs without JetStream (${error.message})`;
    } finally {
      await nc.close();
    }
  },
  redis: () => undefined,
};

/** `runuser -u postgres --` when this is root: initdb and postgres refuse to run as root. */
export function asPostgresUser(command, args) {
  if (process.getuid?.() !== 0) return [command, args];
  const runuser = which('runuser');
  if (!runuser) {
    throw new Error('running as root without `runuser` to start PostgreSQL as postgres');
  }
  return [runuser, ['-u', 'postgres', '--', command, ...args]];
}

/** Make `path` the postgres user's when this is root. */
export function giveToPostgresUser(path) {
  if (process.getuid?.() !== 0) return;
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error('running as root and there is no postgres user to run PostgreSQL as');
  }
  chownSync(path, Number(uid.stdout), Number(gid.stdout));
}

/**
 * initdb and pg_ctl: Debian keeps them off the PATH, in /usr/lib/postgresql/<version>/bin;
 * the version of the project's own cluster once it exists, else the newest.
 */
export function postgresBinaries() {
  const versionFile = join(existingOwnPostgresDir() ?? ownPostgresPlaces[0], 'PG_VERSION');
  const clusterVersion = existsSync(versionFile) ? readFileSync(versionFile, 'utf8').trim() : '';
  const versions = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b))
    : [];
  const version = versions.includes(clusterVersion) ? clusterVersion : versions.at(-1);
  const binDir = version ? join('/usr/lib/postgresql', version, 'bin') : undefined;
  const find = (binary) =>
    binDir && existsSync(join(binDir, binary)) ? join(binDir, binary) : which(binary);
  const [initdb, pgCtl] = [find('initdb'), find('pg_ctl')];
  return initdb && pgCtl ? { initdb, pgCtl } : undefined;
}

/** The project's own PostgreSQL cluster under .data/postgres: trust on loopback, its own port. */
async function startOwnPostgres() {
  const binaries = postgresBinaries();
  if (!binaries) {
    throw new Error(`postgres is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
  }
  const { initdb, pgCtl } = binaries;
  let ownPostgresDir = existingOwnPostgresDir();
  if (!ownPostgresDir) {
    ownPostgresDir = ownPostgresPlaces.find((dir) => {
      mkdirSync(dir, { recursive: true });
      giveToPostgresUser(dir);
      const [test, testArgs] = asPostgresUser('test', ['-w', dir]);
      if (spawnSync(test, testArgs, { stdio: 'ignore' }).status === 0) return true;
      rmSync(dir, { recursive: true, force: true });
      return false;
    });
    if (!ownPostgresDir) {
      throw new Error(
        `the postgres user can write neither ${ownPostgresPlaces.join(' nor ')}; set DATABASE_URL to a server that lets the platform in`,
      );
    }
    log(`creating the project's own PostgreSQL cluster in ${ownPostgresDir}`);
    run(
      ...asPostgresUser(initdb, [
        '-D',
        ownPostgresDir,
        '-U',
        'postgres',
        '--auth=trust',
        '--encoding=UTF8',
      ]),
      { cwd: ownPostgresDir, stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  let port = ownServerPort('postgres');
  if (!port) {
    port = await firstFreePort(5433);
    appendFileSync(
      join(ownPostgresDir, 'postgresql.conf'),
      `\n${OWN_POSTGRES_MARK}\nport = ${port}\nlisten_addresses = 'localhost'\nunix_socket_directories = ''\n`,
    );
  }
  const address = { host: '127.0.0.1', port };
  if (!(await answers(address))) {
    log(`starting the project's own PostgreSQL on port ${port}`);
    const logFile = `${ownPostgresDir}.log`;
    closeSync(openSync(logFile, 'a'));
    giveToPostgresUser(logFile);
    run(
      ...asPostgresUser(pgCtl, ['-D', ownPostgresDir, '-l', logFile, '-w', '-t', '60', 'start']),
      {
        cwd: ownPostgresDir,
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
  }
  return address;
}

/** The project's own `nats-server` with JetStream, under .data/nats, on its own port. */
async function startOwnNats() {
  const binary = which('nats-server');
  if (!binary) {
    throw new Error(`nats-server is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
  }
  let port = ownServerPort('nats');
  if (!port) {
    port = await firstFreePort(4223);
    mkdirSync(ownNatsDir, { recursive: true });
    writeFileSync(
      ownNatsConfig,
      `# this project's own NATS, made by npm start and npm test\nlisten: "127.0.0.1:${port}"\njetstream {\n  store_dir: ${JSON.stringify(join(ownNatsDir, 'store'))}\n}\n`,
    );
  }
  const address = { host: '127.0.0.1', port };
  if (!(await answers(address))) {
    log(`starting the project's own nats-server -js on port ${port}`);
    startDetached('nats', binary, ['-c', ownNatsConfig]);
  }
  return address;
}

const ownStarters = { postgres: startOwnPostgres, nats: startOwnNats };
const ownInstalled = {
  postgres: () => Boolean(postgresBinaries()),
  nats: () => Boolean(which('nats-server')),
};

/** Each server's flag or setting that makes it serve the platform, for the error message. */
const refusalHints = {
  postgres: 'Let that role in over TCP (trust, or a password in the URL)',
  nats: 'Run nats-server with JetStream (-js)',
};

/**
 * Make sure NATS, PostgreSQL and Redis answer and serve the platform. A local one that does
 * not answer is started from the binary on this machine; with no binary, say the one command
 * that installs it. Where the default PostgreSQL refuses the connection or the default NATS
 * has no JetStream, the project runs its own under .data/ and every child process gets its
 * URL. A server whose URL the user set must serve as it is. With `dockerFallback` (tests), a
 * missing binary is left to the test run's testcontainers path when a Docker engine answers.
 */
export async function ensureServers({ dockerFallback = false } = {}) {
  const defaults = { nats: 4222, postgres: 5432, redis: 6379 };
  for (const name of ['nats', 'postgres', 'redis']) {
    const address = hostPort(serverUrls[name], defaults[name]);
    if (origins[name] === 'own') {
      await ownStarters[name]();
    } else if (!(await answers(address))) {
      if (!isLocal(address.host)) {
        throw new Error(`${name} at ${serverUrls[name]} does not answer`);
      }
      log(`${name} is not running on ${address.host}:${address.port}; starting it`);
      if (!starters[name](address)) {
        if (origins[name] === 'default' && ownInstalled[name]?.()) {
          useServer(name, ownServerUrl(name, (await ownStarters[name]()).port));
          origins[name] = 'own';
        } else if (
          dockerFallback &&
          spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0
        ) {
          log(`${name} is not installed; the tests will start it in Docker`);
          continue;
        } else {
          throw new Error(`${name} is not installed. Install the servers with:\n  ${INSTALL_HINT}`);
        }
      }
    }
    const started = hostPort(serverUrls[name], defaults[name]);
    if (!(await waitUntilAnswers(started, 30))) {
      throw new Error(`${name} did not start; see ${join(dataDir, `${name}.log`)}`);
    }
    const refusal = await refusals[name](serverUrls[name]);
    if (!refusal) continue;
    if (origins[name] === 'own') {
      throw new Error(`the project's own ${name} at ${serverUrls[name]} ${refusal}`);
    }
    if (origins[name] === 'user') {
      throw new Error(
        `${name} at ${serverUrls[name]} ${refusal}.\n  ${refusalHints[name]}, or unset ${envNames[name]} to let the set-up run the project's own`,
      );
    }
    log(`${name} at ${serverUrls[name]} ${refusal}; using the project's own instead`);
    const own = await ownStarters[name]();
    useServer(name, ownServerUrl(name, own.port));
    origins[name] = 'own';
    if (!(await waitUntilAnswers(own, 30))) {
      throw new Error(`${name} did not start; see ${join(dataDir, `${name}.log`)}`);
    }
    const ownRefusal = await refusals[name](serverUrls[name]);
    if (ownRefusal) {
      throw new Error(`the project's own ${name} at ${serverUrls[name]} ${ownRefusal}`);
    }
  }
  for (const name of ['nats', 'postgres']) {
    if (origins[name] === 'own') log(`${envNames[name]}=${serverUrls[name]} (the project's own)`);
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

/**
 * What `npm test` and `npm run test:fuzz` do before vitest: dependencies, servers, the test
 * tools, the build, the tests' type check. Exits with a readable message when a step fails.
 */
export async function prepareTests() {
  try {
    ensureDependencies();
    await ensureServers({ dockerFallback: true });
    ensurePromtool();
    build();
    log('type-checking tests');
    run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.tests.json']);
  } catch (error) {
    fail(error);
  }
}

/** Run vitest with `args` (and `env` over this process's) and exit with its status. */
export function runVitestAndExit(args, env = process.env) {
  const vitest = spawnSync(join(root, 'node_modules', '.bin', 'vitest'), ['run', ...args], {
    cwd: root,
    stdio: 'inherit',
    env,
  });
  process.exit(vitest.status ?? 1);
}
