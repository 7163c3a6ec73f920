/**
 * Every process runs on the Node the root's `node` devDependency installs (the machines' own
 * Node may be older): the tests, the services they start, and the image.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startServiceProcess } from '@pcp/testing/service-process';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};
/** Pinned exactly, so that the checkout and the image run one release. */
const BUNDLED = `v${manifest.devDependencies.node}`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the Node every process runs on', () => {
  let env: TestEnvironment | undefined;
  let child: ChildProcess | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await env?.cleanup();
  });

  it('is the bundled release, pinned exactly', () => {
    expect(BUNDLED).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(process.version).toBe(BUNDLED);
  });

  it('runs a service the tests start as its own process', async () => {
    env = await createTestEnvironment();
    const opsPort = await freePort();
    child = startServiceProcess('stores', env, {
      OPS_PORT: String(opsPort),
      OPS_HOST: '127.0.0.1',
    });
    // prom-client's default metrics name the process's Node.
    await expect
      .poll(
        async () => {
          const response = await fetch(`http://127.0.0.1:${opsPort}/metrics`).catch(() => null);
          const text = response?.ok ? await response.text() : '';
          return /^nodejs_version_info\{version="(v[\d.]+)"/m.exec(text)?.[1];
        },
        { timeout: 30_000, interval: 250 },
      )
      .toBe(BUNDLED);
  }, 40_000);

  it('is the image’s base', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM\s+node:(\S+)/gm)].map((match) => match[1]);
    expect(bases.length).toBeGreaterThan(0);
    for (const tag of bases) expect(`v${tag!.split('-')[0]}`).toBe(BUNDLED);
  });
});
