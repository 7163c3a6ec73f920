import { healthSubject } from '@pcp/contracts';
import { createBusClient } from '@pcp/service-kit';
import { nodeArgsOf, repositoryRoot as root } from '@pcp/service-kit/local-processes';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { inject } from 'vitest';
import type { TestEnvironment } from './environment.js';

/**
 * A service as its own process (from its build, as `nodeArgsOf` starts it), on the test file's database
 * and subject prefix: for tests that must see a real process survive, crash or be killed.
 */
export function startServiceProcess(
  service: 'stores' | 'catalog' | 'ordering' | 'payments',
  env: TestEnvironment,
  extraEnv: Record<string, string> = {},
): ChildProcess {
  return spawn(process.execPath, nodeArgsOf(service), {
    cwd: root,
    stdio: 'ignore',
    env: {
      ...process.env,
      DATABASE_URL: env.databaseUrl,
      NATS_SUBJECT_PREFIX: env.prefix,
      MIGRATE_ON_START: 'false',
      OPS_PORT: '0',
      LOG_LEVEL: 'silent',
      ...extraEnv,
    },
  });
}

/** How an admin command's process ended, and its result (its last stdout line, as JSON). */
export interface AdminRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  readonly result: any;
}

/**
 * `node services/<service>/dist/main.js admin <args>` as an operator runs it in a pod, on the
 * test file's servers, database and subject prefix.
 */
export function runAdminProcess(
  service: 'catalog' | 'ordering' | 'payments',
  env: TestEnvironment,
  args: readonly string[],
  extraEnv: Record<string, string> = {},
): Promise<AdminRun> {
  const servers = inject('servers');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeArgsOf(service), 'admin', ...args],
      {
        cwd: root,
        timeout: 30_000,
        env: {
          ...process.env,
          NATS_URL: servers.natsUrl,
          DATABASE_URL: env.databaseUrl,
          NATS_SUBJECT_PREFIX: env.prefix,
          MIGRATE_ON_START: 'false',
          LOG_LEVEL: 'warn',
          ...extraEnv,
        },
      },
      (error, stdout, stderr) => {
        const last = stdout.trimEnd().split('\n').at(-1);
        let result: unknown;
        try {
          result = last ? JSON.parse(last) : undefined;
        } catch {
          result = undefined;
        }
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr, result });
      },
    );
  });
}

/** Resolves once some instance of `service` answers its health subject on NATS. */
export async function waitUntilServing(
  service: 'stores' | 'catalog' | 'ordering' | 'payments',
  env: TestEnvironment,
  timeoutMs = 20_000,
): Promise<void> {
  const bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 1_000, logger: env.logger });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await bus.request(healthSubject(service), {}, { requestId: randomUUID() });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** A service or gateway process whose ports the test learnt from its start-up log line. */
export interface ObservedProcess {
  readonly child: ChildProcess;
  /** Its ops port: `/health/live`, `/health/ready`, `/metrics`. */
  readonly opsUrl: string;
  /** The gateway's public URL (a worker has none). */
  readonly url: string | undefined;
  /** Resolves when it exits: its exit code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Its log lines at warn level or above, parsed, as they came. */
  readonly problems: readonly Record<string, unknown>[];
  /** Its last log lines, for a failure's message. */
  lastLines(): string[];
}

const PINO_WARN = 40;

/**
 * A service or the gateway as its own process from its build, like `startServiceProcess`,
 * on free ports it reports in its start-up log line (`<service> started` / `gateway
 * listening`): for tests that probe its ops port or send it signals. Every server URL comes
 * from the test run's servers (`extraEnv` overrides them, for a proxy in between).
 * `started` resolves once it started; it rejects with its last log lines if it exits first
 * or has not started within `timeoutMs` (then it is killed). `child` is there at once, so a
 * test can stop what it launched even when a start failed.
 */
export function launchProcess(
  service: 'gateway' | 'stores' | 'catalog' | 'ordering' | 'payments',
  env: TestEnvironment,
  extraEnv: Record<string, string> = {},
  timeoutMs = 280_000,
): { child: ChildProcess; started: Promise<ObservedProcess> } {
  const servers = inject('servers');
  const child = spawn(process.execPath, nodeArgsOf(service), {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NATS_URL: servers.natsUrl,
      REDIS_URL: servers.redisUrl,
      DATABASE_URL: env.databaseUrl,
      NATS_SUBJECT_PREFIX: env.prefix,
      REDIS_KEY_PREFIX: env.redisKeyPrefix,
      MIGRATE_ON_START: 'false',
      PORT: '0',
      HOST: '127.0.0.1',
      OPS_PORT: '0',
      OPS_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...extraEnv,
    },
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const recent: string[] = [];
  const problems: Record<string, unknown>[] = [];
  const remember = (line: string) => {
    recent.push(line.length > 2_000 ? `${line.slice(0, 2_000)}…` : line);
    if (recent.length > 40) recent.shift();
  };
  createInterface({ input: child.stderr }).on('line', remember);
  const started = new Promise<ObservedProcess>((resolve, reject) => {
    const startedMessage = service === 'gateway' ? 'gateway listening' : `${service} started`;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${service} did not start in ${timeoutMs} ms:\n${recent.join('\n')}`));
    }, timeoutMs);
    createInterface({ input: child.stdout }).on('line', (line) => {
      remember(line);
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (typeof entry.level === 'number' && entry.level >= PINO_WARN) problems.push(entry);
      if (entry.msg === startedMessage) {
        clearTimeout(timer);
        resolve({
          child,
          opsUrl: `http://127.0.0.1:${String(entry.opsPort)}`,
          url: typeof entry.url === 'string' ? entry.url : undefined,
          exited,
          problems,
          lastLines: () => [...recent],
        });
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`${service} exited (${code ?? signal}) before it started:\n${recent.join('\n')}`),
      );
    });
  });
  return { child, started };
}

/**
 * Stop the processes of `children` still running with SIGINT (a stop with no balancer to
 * wait for: the gateway skips its unready delay) and wait until each has exited.
 */
export async function stopProcesses(children: readonly ChildProcess[]): Promise<void> {
  const running = children.filter((child) => child.exitCode === null && !child.signalCode);
  const exits = running.map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of running) child.kill('SIGINT');
  await Promise.all(exits);
}
