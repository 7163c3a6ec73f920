// NATS, PostgreSQL and Redis of the fault suite alone (`npm run test:faults`): each on a free
// port with its data in the system's temp folder, so the suite can restart them while the
// servers other tests share keep running. Removed again by `stop()`.
import { freePort } from '@pcp/service-kit/local-processes';
import {
  asPostgresUser,
  giveToPostgresUser,
  postgresBinaries,
  waitUntilAnswers,
  which,
} from '@pcp/setup';
import { spawn, spawnSync, type ChildProcess, type SpawnSyncOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type FaultServerName = 'nats' | 'postgres' | 'redis';

export interface FaultServers {
  readonly natsUrl: string;
  /** The `postgres` database of the suite's own cluster (trust on loopback). */
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** Where the servers' logs and NATS store live until `stop()`. */
  readonly logDir: string;
  /** Stop the server, start it again on the same port and data; resolves once it answers. */
  restart(name: FaultServerName): Promise<void>;
  /** Stop every server and remove its data (`keepLogs`: but the logs); safe to call twice. */
  stop(options?: { keepLogs?: boolean }): Promise<void>;
}

function runOrThrow(
  command: string,
  args: readonly string[],
  options: SpawnSyncOptions = {},
): void {
  const result = spawnSync(command, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    ...options,
  });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal}): ${String(result.stderr)}`,
    );
  }
}

/** A server run in the foreground as our child, so stopping it is a signal and a wait. */
function foreground(name: string, command: string, args: readonly string[], logFile: string) {
  let child: ChildProcess | undefined;
  const start = () => {
    const out = openSync(logFile, 'a');
    child = spawn(command, args, { stdio: ['ignore', out, out] });
    closeSync(out);
  };
  const stop = (signal: NodeJS.Signals = 'SIGTERM') =>
    new Promise<void>((resolve) => {
      // This run's process: by the time the timer fires, `child` may be the next run's.
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return resolve();
      // A server that ignores SIGTERM is killed: a restart must not wait for ever.
      const force = setTimeout(() => running.kill('SIGKILL'), 10_000);
      running.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      running.kill(signal);
    });
  return { name, start, stop };
}

/**
 * Start the three servers. `restart(name)` stops one and starts it again on the same port and
 * data (Postgres: an immediate stop, as a crash; NATS: SIGTERM, its JetStream store kept;
 * Redis: SIGTERM, its keys lost as it keeps none on disk).
 */
export async function startFaultServers(): Promise<FaultServers> {
  const id = randomBytes(4).toString('hex');
  // Not a mkdtemp folder: those are 0700, and as root the postgres user must reach its own.
  const base = join(tmpdir(), `pcp-faults-${id}`);
  const pgDir = join(tmpdir(), `pcp-faults-${id}-pg`);
  mkdirSync(base, { recursive: true });
  const [natsPort, pgPort, redisPort] = [await freePort(), await freePort(), await freePort()];
  const started: (() => Promise<void>)[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanup = ({ keepLogs = false }: { keepLogs?: boolean } = {}) =>
    (cleaning ??= (async () => {
      for (const stop of started.reverse()) await stop().catch(() => undefined);
      if (keepLogs) rmSync(join(base, 'nats'), { recursive: true, force: true });
      else rmSync(base, { recursive: true, force: true });
      rmSync(pgDir, { recursive: true, force: true });
      rmSync(`${pgDir}.log`, { force: true });
    })());

  try {
    const natsBinary = which('nats-server');
    const redisBinary = which('redis-server');
    const pg = postgresBinaries();
    if (!natsBinary || !redisBinary || !pg) {
      throw new Error(
        'the fault suite needs nats-server, redis-server and PostgreSQL: apt-get install -y nats-server redis-server postgresql',
      );
    }

    const nats = foreground(
      'nats',
      natsBinary,
      ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', join(base, 'nats')],
      join(base, 'nats.log'),
    );
    nats.start();
    started.push(() => nats.stop());

    const redis = foreground(
      'redis',
      redisBinary,
      [
        '--bind',
        '127.0.0.1',
        '--port',
        String(redisPort),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        base,
      ],
      join(base, 'redis.log'),
    );
    redis.start();
    started.push(() => redis.stop());

    mkdirSync(pgDir, { recursive: true });
    giveToPostgresUser(pgDir);
    runOrThrow(
      ...asPostgresUser(pg.initdb, [
        '-D',
        pgDir,
        '-U',
        'postgres',
        '--auth=trust',
        '--encoding=UTF8',
      ]),
      { cwd: pgDir },
    );
    // fsync off: a killed server loses nothing the kernel already has, which is all a
    // process crash can test; an OS crash is not among the faults.
    appendFileSync(
      join(pgDir, 'postgresql.conf'),
      `\nport = ${pgPort}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n` +
        'fsync = off\nfull_page_writes = off\nmax_connections = 300\n',
    );
    const pgLog = `${pgDir}.log`;
    closeSync(openSync(pgLog, 'a'));
    giveToPostgresUser(pgLog);
    const pgCtl = (...args: string[]) =>
      runOrThrow(
        ...asPostgresUser(pg.pgCtl, ['-D', pgDir, '-l', pgLog, '-w', '-t', '60', ...args]),
        {
          cwd: pgDir,
        },
      );
    pgCtl('start');
    started.push(async () => pgCtl('stop', '-m', 'immediate'));

    const addresses: Record<FaultServerName, { host: string; port: number }> = {
      nats: { host: '127.0.0.1', port: natsPort },
      postgres: { host: '127.0.0.1', port: pgPort },
      redis: { host: '127.0.0.1', port: redisPort },
    };
    for (const [name, address] of Object.entries(addresses)) {
      if (!(await waitUntilAnswers(address, 30))) {
        throw new Error(`the fault suite's ${name} did not start (logs in ${base})`);
      }
    }

    const restarters: Record<FaultServerName, () => Promise<void>> = {
      async nats() {
        await nats.stop('SIGTERM');
        nats.start();
      },
      async redis() {
        await redis.stop('SIGTERM');
        redis.start();
      },
      async postgres() {
        pgCtl('restart', '-m', 'immediate');
      },
    };
    return {
      natsUrl: `nats://127.0.0.1:${natsPort}`,
      databaseUrl: `postgres://postgres@127.0.0.1:${pgPort}/postgres`,
      redisUrl: `redis://127.0.0.1:${redisPort}`,
      logDir: base,
      /** Stop the server, start it again on the same port and data; resolves once it answers. */
      async restart(name) {
        await restarters[name]();
        if (!(await waitUntilAnswers(addresses[name], 60))) {
          throw new Error(`the fault suite's ${name} did not come back (logs in ${base})`);
        }
      },
      /** Stop every server and remove its data (keepLogs: but the logs); safe to call twice. */
      stop: cleanup,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
