// The smoke test's sandbox part (smoke.ts runs it after the demo): an operator creates a
// distribution partner with a test key (the admin command), `pcp listen` forwards its
// test-mode webhooks to a receiver on this machine that verifies each one with
// standardwebhooks and the secret `pcp listen` printed, and `pcp trigger
// order.status_changed` makes them happen at a fixture store (docs/guide/sandbox.md#making-events-happen-pcp-trigger).
// `pcp listen` reaches the gateway through a relay that drops its connection; a second order
// triggered while it is down arrives once the relay is back, and no delivery comes twice.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { repositoryRoot as root } from '@pcp/service-kit/local-processes';
import { Webhook } from 'standardwebhooks';
import { hostAndPort, startTcpProxy } from './tcp-proxy.js';

/** How long the webhooks may take to arrive verified, after `pcp trigger` ended. */
const WEBHOOKS_TIMEOUT_MS = 30_000;
/** How long `pcp listen` may take to print its secret, and `pcp trigger` to finish. */
const COMMAND_TIMEOUT_MS = 20_000;
const EXPECTED = ['order.created', 'order.status_changed'] as const;

const say = (message: string) => process.stdout.write(`[smoke] ${message}\n`);
const PCP = join(root, 'packages/client/bin/pcp.js');

/** Lines of a child's output, prefixed, as they come. */
function relay(child: ChildProcess, prefix: string, onText: (text: string) => void = () => {}) {
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      onText(text);
      for (const line of text.trimEnd().split('\n')) process.stdout.write(`${prefix} ${line}\n`);
    });
  }
}

/** Resolves when `check` holds, or with false after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/** `pcp trigger order.status_changed`: the id of the order it placed, or undefined on failure. */
async function trigger(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const child = spawn(process.execPath, [PCP, 'trigger', 'order.status_changed'], {
    cwd: root,
    env,
  });
  let printed = '';
  relay(child, '[pcp trigger]', (text) => (printed += text));
  const code = await Promise.race([
    new Promise<number | null>((resolve) => child.once('exit', resolve)),
    new Promise<string>((resolve) => setTimeout(resolve, COMMAND_TIMEOUT_MS, 'timeout')),
  ]);
  if (code !== 0) {
    if (code === 'timeout') child.kill('SIGKILL');
    say(`pcp trigger failed (${code})`);
    return undefined;
  }
  return /Placed order (\S+)/.exec(printed)?.[1];
}

/** The gateway at `baseUrl` delivers test-mode webhooks through `pcp listen`; true when so. */
export async function smokeSandboxStream(baseUrl: string): Promise<boolean> {
  const admin = spawnSync(
    process.execPath,
    [
      join(root, 'services/gateway/dist/admin/cli.js'),
      'create-partner',
      '--kind',
      'distribution',
      '--name',
      'Smoke sandbox market',
      '--mode',
      'test',
    ],
    { cwd: root, encoding: 'utf8' },
  );
  if (admin.status !== 0) {
    say(`the admin command failed (${admin.status}): ${admin.stderr.trim()}`);
    return false;
  }
  const { apiKey } = JSON.parse(admin.stdout.trim().split('\n').at(-1) ?? '') as {
    apiKey: string;
  };
  say('created a distribution partner with a test key; pcp listen, then pcp trigger');

  let secret: string | undefined;
  /** `<orderId> <type>` of each verified delivery. */
  const verified = new Set<string>();
  /** How often each webhook-id came. */
  const deliveries = new Map<string, number>();
  let refused = 0;
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const event = new Webhook(secret ?? '').verify(
          Buffer.concat(chunks).toString(),
          request.headers as Record<string, string>,
        ) as { type: string; data: { orderId?: string } };
        verified.add(`${event.data.orderId} ${event.type}`);
        const id = String(request.headers['webhook-id']);
        deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
        response.writeHead(204).end();
      } catch (error) {
        refused += 1;
        say(`the receiver refused a delivery: ${(error as Error).message}`);
        response.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { port } = receiver.address() as AddressInfo;
  const env = { ...process.env, PCP_API_KEY: apiKey, PCP_BASE_URL: baseUrl };
  const relayed = await startTcpProxy(hostAndPort(baseUrl, 80));
  const listen = spawn(
    process.execPath,
    [PCP, 'listen', '--forward-to', `http://127.0.0.1:${port}/webhooks`],
    { cwd: root, env: { ...env, PCP_BASE_URL: `http://127.0.0.1:${relayed.port}` } },
  );
  let listened = '';
  relay(listen, '[pcp listen]', (text) => (listened += text));
  try {
    const ready = await until(() => {
      secret = /secret is (whsec_\S+)/.exec(listened)?.[1];
      return secret !== undefined;
    }, COMMAND_TIMEOUT_MS);
    if (!ready) {
      say(`pcp listen printed no secret within ${COMMAND_TIMEOUT_MS / 1000} s`);
      return false;
    }
    /** The order's webhooks came, verified; says which did not. */
    const arrived = async (orderId: string) => {
      const expected = EXPECTED.map((type) => `${orderId} ${type}`);
      if (await until(() => expected.every((key) => verified.has(key)), WEBHOOKS_TIMEOUT_MS)) {
        say(`the receiver verified ${EXPECTED.join(' and ')} of ${orderId} (standardwebhooks)`);
        return true;
      }
      say(
        `expected ${EXPECTED.join(' and ')} of ${orderId} verified within ` +
          `${WEBHOOKS_TIMEOUT_MS / 1000} s; got ${[...verified].join(', ') || 'none'}`,
      );
      return false;
    };
    const first = await trigger(env);
    if (!first || !(await arrived(first))) return false;

    say('dropping pcp listen’s connection; a second order while it is down');
    await relayed.cut();
    const second = await trigger(env);
    await relayed.restore();
    if (!second || !(await arrived(second))) return false;
    const twice = [...deliveries].filter(([, count]) => count > 1).map(([id]) => id);
    if (twice.length > 0 || refused > 0) {
      say(`forwarded more than once: ${twice.join(', ') || 'none'}; refused: ${refused}`);
      return false;
    }
    say(`the receiver verified ${deliveries.size} deliveries, each once, across the drop`);
    return true;
  } finally {
    listen.kill('SIGINT');
    await new Promise((resolve) =>
      listen.exitCode === null ? listen.once('exit', resolve) : resolve(undefined),
    );
    await relayed.close();
    await new Promise((resolve) => receiver.close(resolve));
  }
}
