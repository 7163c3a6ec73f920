import { healthSubject } from '@pcp/contracts';
import { createBusClient } from '@pcp/service-kit';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { TestEnvironment } from './environment.js';

const root = join(import.meta.dirname, '..');

/**
 * A service as its own process (from its TypeScript sources), on the test file's database
 * and subject prefix: for tests that must see a real process survive, crash or be killed.
 */
export function startServiceProcess(
  service: 'stores' | 'catalog' | 'ordering' | 'payments',
  env: TestEnvironment,
  extraEnv: Record<string, string> = {},
): ChildProcess {
  return spawn(
    process.execPath,
    ['--conditions=@pcp/source', '--import', 'tsx', join(root, `services/${service}/src/main.ts`)],
    {
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
    },
  );
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
