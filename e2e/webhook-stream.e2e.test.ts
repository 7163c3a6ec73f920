import { spawn, type ChildProcess } from 'node:child_process';
import { access } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartner } from '@pcp/gateway/admin';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { hostAndPort, startTcpProxy } from '@pcp/platform';
import { openSse, type SseEvent } from './sse.js';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * The test-mode webhook stream (docs/guide/sandbox.md#webhook-stream) through the gateway over
 * HTTP, and `pcp listen` (the client package's built bin) as a child process forwarding it to
 * a receiver on loopback that verifies each delivery with standardwebhooks. Order events go
 * through the real JetStream and recorder, as ordering's outbox publishes them.
 */

const BIN = fileURLToPath(new URL('../packages/client/bin/pcp.js', import.meta.url));
const PER_PARTNER = 2;

let env: TestEnvironment;
let platform: TestPlatform;
const receivers: WebhookReceiver[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: {
      RATE_LIMIT_READS_PER_MIN: '100000',
      WEBHOOK_STREAMS_PER_PARTNER: String(PER_PARTNER),
      WEBHOOK_STREAM_HEARTBEAT_MS: '500',
    },
  });
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await platform?.stop();
  await env?.cleanup();
});

/** A distribution partner's test key and its test tenant (whose orders the events are of). */
async function testPartner() {
  const partner = await createPartner(platform.gatewayDb, {
    kind: 'distribution',
    name: 'stream test partner',
    mode: 'test',
  });
  return { apiKey: partner.apiKey, tenant: partner.testPartnerId };
}

/** Open the webhook stream with `apiKey`, resuming where asked. */
function openStream(apiKey: string, resume: { lastEventId?: string; query?: string } = {}) {
  const url = new URL('/v1/marketfront/webhooks/stream', platform.baseUrl);
  if (resume.query) url.searchParams.set('lastEventId', resume.query);
  return openSse(url, {
    authorization: `Bearer ${apiKey}`,
    ...(resume.lastEventId ? { 'last-event-id': resume.lastEventId } : {}),
  });
}

const webhookIdOf = (event: SseEvent) =>
  (JSON.parse(event.data) as { webhookId: string }).webhookId;

/** Publish versions of one order's events for the tenant, in turn; their ids (webhook-ids). */
async function publishVersions(tenant: string, orderId: string, versions: number[]) {
  const ids: string[] = [];
  for (const version of versions) {
    ids.push(
      await publishOrderEvent(env, { partnerId: tenant, orderId, storeId: randomUUID(), version }),
    );
  }
  return ids;
}

describe('GET /v1/marketfront/webhooks/stream', () => {
  it('streams the tenant’s webhooks after its secret and resumes after a drop without a loss', async () => {
    const { apiKey, tenant } = await testPartner();
    const first = await openStream(apiKey);
    expect(first.status).toBe(200);
    const [opened] = await first.waitFor(1);
    expect(opened!.event).toBe('pcp.stream_opened');
    const { secret } = JSON.parse(opened!.data) as { secret: string };
    expect(secret).toMatch(/^whsec_/);

    const orderId = randomUUID();
    const before = await publishVersions(tenant, orderId, [1, 2, 3]);
    const got = (await first.waitFor(4)).slice(1);
    expect(got.map(webhookIdOf).sort()).toEqual([...before].sort());
    expect(got.map((event) => event.event)).toContain('order.created');
    const { body, apiVersion } = JSON.parse(got[0]!.data) as { body: string; apiVersion: string };
    expect(JSON.parse(body)).toMatchObject({ data: { orderId } });
    expect(apiVersion).toBe('2026-12-01');
    first.drop();

    // Published while nobody listens: the next stream starts strictly after the last id.
    const during = await publishVersions(tenant, orderId, [4, 5]);
    const resumed = await openStream(apiKey, { lastEventId: got.at(-1)!.id! });
    const again = (await resumed.waitFor(3)).slice(1);
    expect(again.map(webhookIdOf).sort()).toEqual([...during].sort());
    const after = await publishVersions(tenant, orderId, [6]);
    expect(webhookIdOf((await resumed.waitFor(4))[3]!)).toBe(after[0]);
    // The secret is the tenant's, the same on every stream.
    expect(JSON.parse(resumed.events[0]!.data)).toEqual({ secret });
    resumed.drop();

    // The query does what the header does, for clients that cannot set it.
    const byQuery = await openStream(apiKey, { query: got[0]!.id! });
    const rest = (await byQuery.waitFor(6)).slice(1);
    expect(rest.map(webhookIdOf)).toEqual([
      ...got.slice(1).map(webhookIdOf),
      ...again.map(webhookIdOf),
      ...after,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(byQuery.events).toHaveLength(6);
    byQuery.drop();
  });

  it('holds a few streams of a partner open at once', async () => {
    const { apiKey } = await testPartner();
    const open = await Promise.all(Array.from({ length: PER_PARTNER }, () => openStream(apiKey)));
    expect(open.map((stream) => stream.status)).toEqual(open.map(() => 200));
    const refused = await openStream(apiKey);
    expect(refused.status).toBe(429);
    await expect.poll(() => refused.text()).toContain('RATE_LIMITED');
    refused.drop();
    open[0]!.drop();
    await expect
      .poll(async () => {
        const stream = await openStream(apiKey);
        stream.drop();
        return stream.status;
      })
      .toBe(200);
    for (const stream of open) stream.drop();
  });

  it('is FORBIDDEN to a live key', async () => {
    const live = await platform.newPartner('distribution');
    const stream = await openStream(live.apiKey);
    expect(stream.status).toBe(403);
    await expect.poll(() => stream.text()).toContain('FORBIDDEN');
    stream.drop();
  });

  it('refuses a Last-Event-ID that is not one', async () => {
    const { apiKey } = await testPartner();
    const stream = await openStream(apiKey, { lastEventId: 'yesterday' });
    expect(stream.status).toBe(400);
    stream.drop();
  });
});

describe('pcp listen', () => {
  it('forwards every delivery signed to the local URL, and loses none when its connection drops', async () => {
    await access(BIN).catch(() => {
      throw new Error(`${BIN} is missing: run npx tsc -b first`);
    });
    const { apiKey, tenant } = await testPartner();
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    // The CLI reaches the gateway through a relay the test cuts: a dropped connection.
    const relay = await startTcpProxy(hostAndPort(platform.baseUrl, 80));
    const child = spawn(process.execPath, [BIN, 'listen', '--forward-to', receiver.url], {
      env: {
        ...process.env,
        PCP_API_KEY: apiKey,
        PCP_BASE_URL: `http://127.0.0.1:${relay.port}`,
      },
    });
    children.push(child);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await expect.poll(() => stdout, { timeout: 10_000 }).toMatch(/secret is whsec_\S+/);
    const secret = /secret is (whsec_\S+)/.exec(stdout)![1]!;
    const verify = (index: number) => {
      const request = receiver.received[index]!;
      return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
    };

    const orderId = randomUUID();
    const ids = await publishVersions(tenant, orderId, [1, 2]);
    await receiver.waitFor(2);

    await relay.cut();
    ids.push(...(await publishVersions(tenant, orderId, [3, 4])));
    await new Promise((resolve) => setTimeout(resolve, 500));
    await relay.restore();
    await receiver.waitFor(4, undefined, 15_000);
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(receiver.received).toHaveLength(4);
    expect(receiver.received.map((request) => request.headers['webhook-id']).sort()).toEqual(
      [...ids].sort(),
    );
    for (let index = 0; index < 4; index++) {
      expect(verify(index)).toMatchObject({ data: { orderId } });
      // As a delivery carries it: the version of its body (no endpoint: the stream request's).
      expect(receiver.received[index]!.headers['pcp-version']).toBe('2026-12-01');
    }
    expect(stdout.match(/-> 204/g)).toHaveLength(4);

    child.kill('SIGINT');
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    await relay.close();
  });
});
