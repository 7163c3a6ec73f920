// Event streams end with their authority (docs/guide/live-events.md#limits): across two gateway
// replicas, a live or webhook stream ends when its key is revoked or its partner suspended (by
// the admin command), its console session signs out or expires, its store is deleted (a
// sandbox reset), or it reaches its maximum age; a lost message is caught by the re-check;
// the caps count a partner's streams across its modes and the replicas.
import { createPlatformClient } from '@pcp/client';
import { sessionCookieName } from '@pcp/contracts';
import type { GatewayService } from '@pcp/gateway';
import { createKey, revokeKey, setRateLimits } from '@pcp/gateway/admin';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';
import { openSse, type OpenStream } from './sse.js';

const cli = fileURLToPath(new URL('../services/gateway/dist/admin/cli.js', import.meta.url));
const LIVE_PER_PARTNER = 2;

let env: TestEnvironment;
let platform: TestPlatform;
/** Another replica of the gateway on the same database, subjects and Redis. */
let second: GatewayService;
const extraGateways: GatewayService[] = [];
const streams: OpenStream[] = [];
let host: Awaited<ReturnType<typeof startCatalogHost>>;

async function startGateway(overrides: Record<string, string> = {}): Promise<GatewayService> {
  const gateway = platform.newGateway(overrides);
  await gateway.start();
  extraGateways.push(gateway);
  return gateway;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  // Keys cached for a minute and streams re-checked every ten: within a test, only the
  // messages can end a stream, on every replica.
  platform = await startPlatform(env, {
    gatewayEnv: {
      AUTH_CACHE_TTL_MS: '60000',
      STREAM_RECHECK_INTERVAL_MS: '300000',
      LIVE_STREAMS_PER_PARTNER: String(LIVE_PER_PARTNER),
      WEBHOOK_STREAMS_PER_PARTNER: '1',
      RATE_LIMIT_READS_PER_MIN: '100000',
    },
  });
  second = await startGateway();
  host = await startCatalogHost();
}, 60_000);

afterAll(async () => {
  for (const stream of streams) stream.drop();
  for (const gateway of extraGateways) await gateway.stop();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

/** The admin command as an operator runs it, on this file's database and subjects. */
async function admin(args: string[]) {
  const child = spawn(process.execPath, [cli, ...args], {
    env: {
      ...process.env,
      DATABASE_URL: env.databaseUrl,
      NATS_URL: inject('servers').natsUrl,
      NATS_SUBJECT_PREFIX: env.prefix,
      LOG_LEVEL: 'silent',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(code, stderr).toBe(0);
}

async function open(baseUrl: string, path: string, headers: Record<string, string>) {
  const stream = await openSse(new URL(path, baseUrl), headers);
  streams.push(stream);
  return stream;
}
const bearer = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` });
const partnerStream = (baseUrl: string, apiKey: string) =>
  open(baseUrl, '/v1/marketfront/events', bearer(apiKey));
const webhookStream = (baseUrl: string, apiKey: string) =>
  open(baseUrl, '/v1/marketfront/webhooks/stream', bearer(apiKey));
const storeStream = (baseUrl: string, storeId: string, apiKey: string) =>
  open(baseUrl, `/v1/commerce/stores/${storeId}/events`, bearer(apiKey));

async function expectOpen(...opened: OpenStream[]) {
  for (const stream of opened) {
    expect(stream.status, stream.text()).toBe(200);
    // The first frame (retry:) arrived: the stream is registered.
    await expect.poll(() => stream.text()).toContain('retry:');
  }
}
const expectEnds = (stream: OpenStream, timeout = 5_000) =>
  expect.poll(() => stream.ended(), { timeout }).toBe(true);

const unlimited = { reads: 100_000, writes: 100_000, discovery: 100_000 };

async function partner(kind: 'commerce' | 'distribution') {
  const created = await platform.newPartner(
    kind,
    kind === 'distribution' ? { paymentTypes: ['CARD'] } : {},
  );
  await setRateLimits(platform.gatewayDb, created.partnerId, unlimited);
  return created;
}

async function signIn(apiKey: string, baseUrl: string) {
  const response = await call(baseUrl, 'POST', '/v1/sessions', { body: { apiKey } });
  expect(response.status, response.text).toBe(201);
  const setCookie = response.headers.getSetCookie()[0] ?? '';
  const token = new RegExp(`^${sessionCookieName}=([^;]+)`).exec(setCookie)?.[1];
  expect(token).toBeDefined();
  return {
    cookie: `${sessionCookieName}=${token}`,
    csrfToken: response.body.csrfToken as string,
    expiresAt: Date.parse(response.body.expiresAt as string),
  };
}

describe('a stream ends', () => {
  it('when its key is revoked by the admin command, on another replica, before an order it would have heard', async () => {
    const commerce = await partner('commerce');
    const market = await partner('distribution');
    const other = await createKey(platform.gatewayDb, market.partnerId);
    const store = await storeWithSodas(
      createPlatformClient({ baseUrl: platform.baseUrl, apiKey: commerce.apiKey }),
      host,
      { orderSubmissionUrl: undefined },
    );
    const revoked = await partnerStream(second.url(), market.apiKey);
    const kept = await partnerStream(second.url(), other.apiKey);
    await expectOpen(revoked, kept);

    await admin(['revoke-key', '--key-id', market.keyId]);
    await expectEnds(revoked);

    const marketClient = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: other.apiKey });
    const buyer = await newBuyer(marketClient, '4242424242424242');
    const placed = await call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
      apiKey: other.apiKey,
      headers: { 'X-End-User-Id': buyer.endUser, 'Idempotency-Key': randomUUID() },
      body: sodaOrder(store.ids, store.storeId, buyer.paymentId),
    });
    expect(placed.status, placed.text).toBe(201);
    const orderId = placed.body.orderId as string;
    const isOrder = (text: string) => text.includes(orderId);
    // The partner's other key still hears it: the revoked one would have.
    await expect.poll(() => isOrder(kept.text()), { timeout: 15_000 }).toBe(true);
    expect(kept.ended()).toBe(false);
    expect(isOrder(revoked.text())).toBe(false);
    // A reconnect is refused.
    const again = await partnerStream(second.url(), market.apiKey);
    expect(again.status).toBe(401);
  });

  it('when its partner is suspended by the admin command, in both modes, on both replicas', async () => {
    const market = await partner('distribution');
    const test = await createKey(platform.gatewayDb, market.partnerId, { mode: 'test' });
    const live = await partnerStream(platform.baseUrl, market.apiKey);
    const sandbox = await partnerStream(second.url(), test.apiKey);
    await expectOpen(live, sandbox);
    await admin(['suspend-partner', '--partner', market.partnerId]);
    await expectEnds(live);
    await expectEnds(sandbox);
  });

  it('the test-mode webhook stream, when its key is revoked', async () => {
    const market = await partner('distribution');
    const test = await createKey(platform.gatewayDb, market.partnerId, { mode: 'test' });
    const stream = await webhookStream(second.url(), test.apiKey);
    expect(stream.status, stream.text()).toBe(200);
    await stream.waitFor(1);
    await admin(['revoke-key', '--key-id', test.keyId]);
    await expectEnds(stream);
  });

  it('when its console session signs out on another replica', async () => {
    const market = await partner('distribution');
    const session = await signIn(market.apiKey, platform.baseUrl);
    const stream = await open(second.url(), '/v1/marketfront/events', { cookie: session.cookie });
    const byKey = await partnerStream(second.url(), market.apiKey);
    await expectOpen(stream, byKey);
    const out = await call(platform.baseUrl, 'DELETE', '/v1/sessions/current', {
      headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
    });
    expect(out.status, out.text).toBe(204);
    await expectEnds(stream);
    // The partner's key-opened stream is not the session's.
    expect(byKey.ended()).toBe(false);
  });

  it('when its console session expires', async () => {
    // Long enough that a busy machine still opens the stream before the session ends.
    const short = await startGateway({ SESSION_MAX_AGE_MS: '5000' });
    const market = await partner('distribution');
    const session = await signIn(market.apiKey, short.url());
    const stream = await open(short.url(), '/v1/marketfront/events', { cookie: session.cookie });
    await expectOpen(stream);
    await expectEnds(stream, 15_000);
    // Whole seconds in the session's expiresAt: it ends within one of it.
    expect(Date.now()).toBeGreaterThanOrEqual(session.expiresAt - 1_000);
  });

  it('when its store is deleted by a sandbox reset; the partner’s live store’s stays', async () => {
    const commerce = await partner('commerce');
    const test = await createKey(platform.gatewayDb, commerce.partnerId, { mode: 'test' });
    const testStoreId = randomUUID();
    const liveStoreId = randomUUID();
    for (const [apiKey, storeId] of [
      [test.apiKey, testStoreId],
      [commerce.apiKey, liveStoreId],
    ] as const) {
      const put = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
        apiKey,
        body: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: undefined }),
      });
      expect(put.status, put.text).toBeLessThan(300);
    }
    const deleted = await storeStream(second.url(), testStoreId, test.apiKey);
    const kept = await storeStream(second.url(), liveStoreId, commerce.apiKey);
    await expectOpen(deleted, kept);
    const reset = await call(platform.baseUrl, 'POST', '/v1/test/reset', { apiKey: test.apiKey });
    expect(reset.status, reset.text).toBe(200);
    await expectEnds(deleted);
    expect(kept.ended()).toBe(false);
  });

  it('at its maximum age', async () => {
    const young = await startGateway({ STREAM_MAX_AGE_MS: '1500' });
    const market = await partner('distribution');
    const openedAt = Date.now();
    const stream = await partnerStream(young.url(), market.apiKey);
    await expectOpen(stream);
    await expectEnds(stream);
    expect(Date.now() - openedAt).toBeGreaterThanOrEqual(1_500);
  });

  it('at the next re-check when the message that should have ended it is lost', async () => {
    // Keys not cached: the re-check reads the key as it is now.
    const checking = await startGateway({
      STREAM_RECHECK_INTERVAL_MS: '300',
      AUTH_CACHE_TTL_MS: '0',
    });
    const market = await partner('distribution');
    const commerce = await partner('commerce');
    const storeId = randomUUID();
    const put = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
      body: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: undefined }),
    });
    expect(put.status, put.text).toBeLessThan(300);
    const partnerEvents = await partnerStream(checking.url(), market.apiKey);
    const storeEvents = await storeStream(checking.url(), storeId, commerce.apiKey);
    await expectOpen(partnerEvents, storeEvents);
    // Revoked, and deleted, in the databases, with no announcement.
    await revokeKey(platform.gatewayDb, market.keyId);
    await platform.storesDb.deleteFrom('stores').where('store_id', '=', storeId).execute();
    await expectEnds(partnerEvents);
    await expectEnds(storeEvents);
  });
});

describe('the caps', () => {
  it('count a partner’s live streams across its modes and both replicas', async () => {
    const market = await partner('distribution');
    const test = await createKey(platform.gatewayDb, market.partnerId, { mode: 'test' });
    const live = await partnerStream(platform.baseUrl, market.apiKey);
    const sandbox = await partnerStream(second.url(), test.apiKey);
    await expectOpen(live, sandbox);
    for (const [baseUrl, apiKey] of [
      [platform.baseUrl, market.apiKey],
      [second.url(), test.apiKey],
      [second.url(), market.apiKey],
    ] as const) {
      const refused = await partnerStream(baseUrl, apiKey);
      expect(refused.status).toBe(429);
      await expect.poll(() => refused.text()).toContain('RATE_LIMITED');
    }
    // Another partner is not limited by it.
    const stranger = await partnerStream(second.url(), (await partner('distribution')).apiKey);
    await expectOpen(stranger);
    // A closed stream gives its place back, on any replica.
    live.drop();
    await expect
      .poll(async () => {
        const stream = await partnerStream(second.url(), market.apiKey);
        stream.drop();
        return stream.status;
      })
      .toBe(200);
  });

  it('count a partner’s webhook streams across both replicas', async () => {
    const market = await partner('distribution');
    const test = await createKey(platform.gatewayDb, market.partnerId, { mode: 'test' });
    const first = await webhookStream(platform.baseUrl, test.apiKey);
    expect(first.status, first.text()).toBe(200);
    const refused = await webhookStream(second.url(), test.apiKey);
    expect(refused.status).toBe(429);
    await expect.poll(() => refused.text()).toContain('RATE_LIMITED');
  });
});
