import {
  baseEnvSchema,
  connectNats,
  createLogger,
  drainNats,
  loadConfig,
  natsTls,
} from '@pcp/service-kit';
import { connect } from 'nats';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Production NATS speaks TLS only (deploy/nats/values.yaml): a service with NATS_TLS_CA
 * connects over TLS and trusts only that CA. A throwaway CA and server certificate are minted
 * with openssl for a nats-server of this test's own.
 */

const natsServer = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin']
  .map((dir) => join(dir, 'nats-server'))
  .find((path) => existsSync(path));
if (!natsServer && process.env.CI) {
  throw new Error('nats-server is missing in CI: .ci/run installs it');
}

let dir: string;
let server: ChildProcess | undefined;
let url: string;

async function freePort(): Promise<number> {
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  await new Promise((resolve) => listener.close(resolve));
  return port;
}

/** A CA, and a certificate it signs for 127.0.0.1, in `dir`. */
function mintCertificates(dir: string, name: string) {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=${name} CA`,
    '-keyout',
    `${name}-ca.key`,
    '-out',
    `${name}-ca.crt`,
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    `${name}-server.key`,
    '-out',
    `${name}-server.csr`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}-server.csr`,
    '-CA',
    `${name}-ca.crt`,
    '-CAkey',
    `${name}-ca.key`,
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    `${name}-san.cnf`,
    '-out',
    `${name}-server.crt`,
  );
}

beforeAll(async () => {
  if (!natsServer) return;
  dir = await mkdtemp(join(tmpdir(), 'pcp-nats-tls-'));
  for (const name of ['pcp', 'other']) {
    await writeFile(join(dir, `${name}-san.cnf`), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    mintCertificates(dir, name);
  }
  const port = await freePort();
  await writeFile(
    join(dir, 'nats.conf'),
    JSON.stringify({
      listen: `127.0.0.1:${port}`,
      tls: { cert_file: join(dir, 'pcp-server.crt'), key_file: join(dir, 'pcp-server.key') },
    }),
  );
  server = spawn(natsServer, ['-c', join(dir, 'nats.conf')], { stdio: 'ignore' });
  url = `tls://127.0.0.1:${port}`;
  const ca = join(dir, 'pcp-ca.crt');
  for (let attempt = 0; ; attempt++) {
    try {
      await (await connect({ servers: url, tls: { caFile: ca } })).close();
      break;
    } catch (error) {
      if (attempt > 100 || server.exitCode !== null) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}, 60_000);

afterAll(async () => {
  server?.kill('SIGTERM');
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!natsServer)('NATS over TLS', () => {
  const logger = createLogger('test', 'silent');

  it('connects a service that has NATS_TLS_CA, and requests go over TLS', async () => {
    const config = loadConfig(baseEnvSchema, {
      NATS_URL: url,
      NATS_TLS_CA: join(dir, 'pcp-ca.crt'),
    });
    const nc = await connectNats({
      url: config.NATS_URL,
      name: 'tls',
      logger,
      tls: natsTls(config),
    });
    try {
      nc.subscribe('echo', { callback: (_error, msg) => msg.respond(msg.data) });
      const reply = await nc.request('echo', 'over tls', { timeout: 2_000 });
      expect(reply.string()).toBe('over tls');
      expect(nc.info?.tls_required).toBe(true);
    } finally {
      await drainNats(nc, 2_000);
    }
  });

  it('refuses a plain connection, and a server whose certificate another CA signed', async () => {
    const port = new URL(url.replace('tls://', 'http://')).port;
    await expect(
      connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false, timeout: 2_000 }),
    ).rejects.toThrow();
    await expect(
      connectNats({
        url,
        name: 'wrong-ca',
        logger,
        tls: natsTls(loadConfig(baseEnvSchema, { NATS_TLS_CA: join(dir, 'other-ca.crt') })),
      }),
    ).rejects.toThrow(/certificate/i);
  });

  it('takes a client certificate only with its key', () => {
    expect(() =>
      natsTls(loadConfig(baseEnvSchema, { NATS_TLS_CERT: join(dir, 'pcp-server.crt') })),
    ).toThrow(/NATS_TLS_CERT and NATS_TLS_KEY/);
  });
});
