import { spawn, type ChildProcess } from 'node:child_process';
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createPlatformClient } from '@pcp/client';
import { fixtureStoreIds } from '@pcp/contracts';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/**
 * `pcp trigger` (the client package's built bin) as a child process against the platform
 * over HTTP: a test order at a fixture store, advanced with the test helper; and with
 * `pcp listen` alongside, its webhooks reach a receiver on loopback, verified with
 * standardwebhooks (docs/guide/sandbox.md#making-events-happen-pcp-trigger).
 */

const BIN = fileURLToPath(new URL('../packages/client/bin/pcp.js', import.meta.url));

let env: TestEnvironment;
let platform: TestPlatform;
const receivers: WebhookReceiver[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  await access(BIN).catch(() => {
    throw new Error(`${BIN} is missing: run npx tsc -b first`);
  });
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', WEBHOOK_STREAM_HEARTBEAT_MS: '500' },
  });
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await platform?.stop();
  await env?.cleanup();
});

/** `pcp …` as a child process with the key and the platform in its environment. */
function pcp(apiKey: string, ...args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, PCP_API_KEY: apiKey, PCP_BASE_URL: platform.baseUrl },
  });
  children.push(child);
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, output, exited };
}

/** Run `pcp …` to its end: its exit code and output. */
async function run(apiKey: string, ...args: string[]) {
  const { output, exited } = pcp(apiKey, ...args);
  const code = await exited;
  return { code, ...output };
}

const orderIdIn = (stdout: string) => /Placed order (\S+)/.exec(stdout)?.[1];

describe('pcp trigger', () => {
  it('places a test order at a fixture store and confirms it (order.status_changed)', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    const { code, stdout, stderr } = await run(partner.apiKey, 'trigger', 'order.status_changed');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const orderId = orderIdIn(stdout);
    expect(orderId).toBeDefined();
    expect(stdout).toMatch(/to confirmed|already advanced order .* to confirmed/);

    const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
    const { data: order } = await client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId: orderId! } },
    });
    expect(order).toMatchObject({ orderId, status: 'confirmed', paymentType: 'PAY_AT_STORE' });
    expect(fixtureStoreIds).toContain(order!.storeId);
    expect(order!.fulfillment.mode).toBe('PICKUP');
  });

  it('cancels the order for order.cancelled', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    const { code, stdout } = await run(partner.apiKey, 'trigger', 'order.cancelled');
    expect(code).toBe(0);
    const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
    const { data: order } = await client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId: orderIdIn(stdout)! } },
    });
    expect(order).toMatchObject({ state: 'cancelled', status: 'cancelled' });
  });

  it('refuses an unknown event with the usage (exit 2), and prints a live key’s 403', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    const unknown = await run(partner.apiKey, 'trigger', 'order.eaten');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'Unknown event order.eaten: pcp trigger supports order.created, order.status_changed, order.cancelled',
    );

    const live = await platform.newPartner('distribution');
    const refused = await run(live.apiKey, 'trigger', 'order.created');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^The platform refused it \(HTTP 403\) FORBIDDEN: /);
  });

  it('with pcp listen: the receiver gets order.created and order.status_changed, verified', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const listener = pcp(partner.apiKey, 'listen', '--forward-to', receiver.url);
    await expect
      .poll(() => listener.output.stdout, { timeout: 10_000 })
      .toMatch(/secret is whsec_\S+/);
    const secret = /secret is (whsec_\S+)/.exec(listener.output.stdout)![1]!;

    const triggered = await run(partner.apiKey, 'trigger', 'order.status_changed');
    expect(triggered.code).toBe(0);
    const orderId = orderIdIn(triggered.stdout);
    const ofTheOrder = (type: string) => (request: (typeof receiver.received)[number]) =>
      request.payload?.type === type && request.payload?.data?.orderId === orderId;
    const [created] = await receiver.waitFor(1, ofTheOrder('order.created'), 20_000);
    const [changed] = await receiver.waitFor(1, ofTheOrder('order.status_changed'), 20_000);
    for (const request of [created!, changed!]) {
      const verified = new Webhook(secret).verify(
        request.body,
        request.headers as Record<string, string>,
      );
      expect(verified).toMatchObject({ data: { orderId } });
    }
    expect(changed!.payload.data).toMatchObject({ status: 'confirmed' });

    listener.child.kill('SIGINT');
    expect(await listener.exited).toBe(0);
  });
});
