import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  launchProcess,
  stopProcesses,
  waitUntilServing,
  type ObservedProcess,
} from '@pcp/testing/service-process';
import { hostAndPort, startTcpProxy } from '@pcp/platform';

/**
 * Issue 15: readiness reflects the process's own dependencies, liveness does not (an outage
 * of Postgres or NATS must make pods unready, never get them restarted). A worker (stores)
 * and the gateway run as their own processes, reaching Postgres and NATS through TCP relays
 * the test cuts (the shared servers stay up). While a dependency is gone, `/health/ready`
 * answers 503 naming the failing check and `/health/live` 200; once it is back, the same
 * process (no restart) is ready again.
 */

let env: TestEnvironment;
let database: Awaited<ReturnType<typeof startTcpProxy>>;
let nats: Awaited<ReturnType<typeof startTcpProxy>>;
let stores: ObservedProcess;
let gateway: ObservedProcess;
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  const servers = inject('servers');
  database = await startTcpProxy(hostAndPort(env.databaseUrl, 5432));
  nats = await startTcpProxy(hostAndPort(servers.natsUrl, 4222));
  const databaseUrl = new URL(env.databaseUrl);
  databaseUrl.hostname = '127.0.0.1';
  databaseUrl.port = String(database.port);
  const throughProxies = {
    DATABASE_URL: databaseUrl.toString(),
    NATS_URL: `nats://127.0.0.1:${nats.port}`,
  };
  const launch = (service: 'stores' | 'gateway') => {
    const { child, started } = launchProcess(service, env, throughProxies);
    children.push(child);
    return started;
  };
  [stores, gateway] = await Promise.all([launch('stores'), launch('gateway')]);
}, 300_000);

afterAll(async () => {
  await stopProcesses(children);
  await database?.close();
  await nats?.close();
  await env?.cleanup();
});

interface Probe {
  status: number;
  body: { status?: string; checks?: Record<string, boolean> };
}

async function probe(url: string): Promise<Probe> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: response.status, body: (await response.json()) as Probe['body'] };
}

/** A probe of `process`; a refused one says why: the process exited, with its last lines. */
const probeOf = (process: ObservedProcess, url: string): Promise<Probe | string> =>
  probe(url).catch((error: unknown) =>
    [
      `no answer (${String(error)}), exit ${process.child.exitCode ?? process.child.signalCode}`,
      ...process.lastLines(),
    ].join('\n'),
  );

const targets = () => [
  { name: 'stores', process: stores, live: `${stores.opsUrl}/health/live` },
  // The gateway's liveness is on its public port, where Kubernetes probes it.
  { name: 'gateway', process: gateway, live: `${gateway.url!}/health/live` },
];

/** Both processes' readiness once it matches `expected`, polled (a probe's period is 5 s). */
async function readinessBecomes(expected: (name: string) => Probe) {
  for (const target of targets()) {
    await expect
      .poll(() => probeOf(target.process, `${target.process.opsUrl}/health/ready`), {
        timeout: 30_000,
        interval: 200,
      })
      .toEqual(expected(target.name));
  }
}

const allPass = (name: string): Probe => ({
  status: 200,
  body: {
    status: 'ok',
    checks:
      name === 'gateway'
        ? { nats: true, database: true, accepting: true }
        : { nats: true, subjects: true, database: true },
  },
});
const failing =
  (check: string) =>
  (name: string): Probe => {
    const { checks } = allPass(name).body;
    return { status: 503, body: { status: 'unavailable', checks: { ...checks, [check]: false } } };
  };

async function expectAliveAndUnrestarted() {
  for (const target of targets()) {
    expect(await probeOf(target.process, target.live), target.name).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    expect(target.process.child.exitCode, target.name).toBeNull();
    expect(target.process.child.signalCode, target.name).toBeNull();
  }
}

describe('readiness follows the process’s own dependencies; liveness does not', () => {
  it('is ready while Postgres and NATS answer', async () => {
    await readinessBecomes(allPass);
    await expectAliveAndUnrestarted();
  });

  it('goes unready naming the database while Postgres is gone, and ready again after', async () => {
    await database.cut();
    await readinessBecomes(failing('database'));
    await expectAliveAndUnrestarted();

    await database.restore();
    await readinessBecomes(allPass);
    await expectAliveAndUnrestarted();
  }, 120_000);

  it('goes unready naming NATS while NATS is gone, and serves its subjects again after', async () => {
    await nats.cut();
    await readinessBecomes(failing('nats'));
    await expectAliveAndUnrestarted();

    await nats.restore();
    await readinessBecomes(allPass);
    await expectAliveAndUnrestarted();
    // The same process answers on NATS again, without a restart.
    await waitUntilServing('stores', env);
  }, 120_000);
});
