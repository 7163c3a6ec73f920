import { createPlatformClient } from '@pcp/client';
import { events } from '@pcp/contracts';
import { createKey, createPartner, setRateLimits } from '@pcp/gateway/admin';
import { randomUUID } from 'node:crypto';
import { connect as connectTcp, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { createLoneGateway } from '../services/gateway/test/support/lone-gateway.js';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';
import { openSse, type OpenStream, type SseEvent } from './sse.js';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * The live event streams (docs/guide/live-events.md) through the gateway over HTTP: real
 * orders, status moves and pauses, their events from JetStream through the gateway's one
 * source to the streams of their store and partner, and to no other; the per-partner cap,
 * the gateway's close and a client that never reads.
 */

const PER_PARTNER = 3;
const MAX_QUEUED_BYTES = 512 * 1024;

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
const receivers: WebhookReceiver[] = [];
const streams: OpenStream[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: {
      LIVE_STREAMS_PER_PARTNER: String(PER_PARTNER),
      LIVE_STREAM_HEARTBEAT_MS: '500',
      LIVE_STREAM_MAX_QUEUED_BYTES: String(MAX_QUEUED_BYTES),
    },
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
    },
  });
  host = await startCatalogHost();
}, 60_000);

afterAll(async () => {
  for (const stream of streams) stream.drop();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const unlimited = { reads: 100_000, writes: 100_000, discovery: 100_000 };

async function partner(kind: 'commerce' | 'distribution') {
  const created = await platform.newPartner(
    kind,
    kind === 'distribution' ? { paymentTypes: ['CARD'] } : {},
  );
  await setRateLimits(platform.gatewayDb, created.partnerId, unlimited);
  return created;
}

async function open(path: string, apiKey: string, baseUrl = platform.baseUrl) {
  const stream = await openSse(new URL(path, baseUrl), { authorization: `Bearer ${apiKey}` });
  streams.push(stream);
  return stream;
}

const storeStream = (storeId: string, apiKey: string) =>
  open(`/v1/commerce/stores/${storeId}/events`, apiKey);
const partnerStream = (apiKey: string) => open('/v1/marketfront/events', apiKey);

const dataOf = (event: SseEvent) => JSON.parse(event.data) as Record<string, unknown>;
const about = (stream: OpenStream, key: string, value: string) =>
  stream.events.filter((event) => dataOf(event)[key] === value);

/** `stream` has the events `predicate` picks, at least `count` of them. */
async function waitForEvents(
  stream: OpenStream,
  predicate: (event: SseEvent) => boolean,
  count: number,
) {
  await expect
    .poll(() => stream.events.filter(predicate).length, { timeout: 15_000 })
    .toBeGreaterThanOrEqual(count);
  return stream.events.filter(predicate);
}

async function emptyStore(apiKey: string) {
  const storeId = randomUUID();
  const put = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey,
    body: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: undefined }),
  });
  expect(put.status, put.text).toBeLessThan(300);
  return storeId;
}

describe('live event streams', () => {
  it('streams a real order’s events to its store and its partner, and its webhook tries to the partner, never elsewhere', async () => {
    const commerce = await partner('commerce');
    const market = await partner('distribution');
    const stranger = await partner('distribution');
    const commerceClient = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: commerce.apiKey,
    });
    const marketClient = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: market.apiKey });
    const store = await storeWithSodas(commerceClient, host, { orderSubmissionUrl: undefined });
    const otherStoreId = await emptyStore(commerce.apiKey);
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const endpoint = await call(platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', {
      apiKey: market.apiKey,
      body: { url: receiver.url, events: ['order.created', 'order.status_changed'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const { apiKey: marketTestKey } = await createKey(platform.gatewayDb, market.partnerId, {
      mode: 'test',
    });

    const storeLive = await storeStream(store.storeId, commerce.apiKey);
    const otherStore = await storeStream(otherStoreId, commerce.apiKey);
    const marketLive = await partnerStream(market.apiKey);
    const marketTest = await partnerStream(marketTestKey);
    const strangerLive = await partnerStream(stranger.apiKey);
    for (const stream of [storeLive, otherStore, marketLive, marketTest, strangerLive]) {
      expect(stream.status, stream.text()).toBe(200);
    }

    const buyer = await newBuyer(marketClient, '4242424242424242');
    const placed = await call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
      apiKey: market.apiKey,
      headers: { 'X-End-User-Id': buyer.endUser, 'Idempotency-Key': randomUUID() },
      body: sodaOrder(store.ids, store.storeId, buyer.paymentId),
    });
    expect(placed.status, placed.text).toBe(201);
    const orderId = placed.body.orderId as string;
    const confirmed = await call(
      platform.baseUrl,
      'POST',
      `/v1/commerce/orders/${orderId}/status`,
      {
        apiKey: commerce.apiKey,
        body: { status: 'confirmed' },
      },
    );
    expect(confirmed.status, confirmed.text).toBe(200);
    const paused = await call(
      platform.baseUrl,
      'POST',
      `/v1/commerce/stores/${store.storeId}/status`,
      {
        apiKey: commerce.apiKey,
        body: { status: 'paused', reason: 'too_busy' },
      },
    );
    expect(paused.status, paused.text).toBeLessThan(300);

    const isOrder = (event: SseEvent) =>
      event.event.startsWith('order.') && dataOf(event).orderId === orderId;
    const storeOrderEvents = await waitForEvents(storeLive, isOrder, 2);
    expect(storeOrderEvents.map((event) => event.event)).toEqual([
      'order.created',
      'order.status_changed',
    ]);
    expect(dataOf(storeOrderEvents[1]!)).toMatchObject({
      orderId,
      storeId: store.storeId,
      status: 'confirmed',
      previousStatus: 'pending',
      version: 2,
    });
    // Partners are told what a webhook tells: nothing internal (the placing partner, the mode).
    expect(dataOf(storeOrderEvents[0]!)).not.toHaveProperty('partnerId');
    for (const event of storeOrderEvents) expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
    const [pause] = await waitForEvents(
      storeLive,
      (event) => event.event === 'store.status_changed',
      1,
    );
    expect(dataOf(pause!)).toMatchObject({ storeId: store.storeId, status: 'paused' });
    expect(dataOf(pause!)).not.toHaveProperty('mode');

    const marketOrderEvents = await waitForEvents(marketLive, isOrder, 2);
    expect(marketOrderEvents.map((event) => event.id)).toEqual(
      storeOrderEvents.map((event) => event.id),
    );
    // Each delivery's try, once recorded: the created event's and the confirmation's.
    const tries = await waitForEvents(
      marketLive,
      (event) => event.event === 'webhook.delivery_attempted',
      2,
    );
    for (const attempt of tries) {
      expect(dataOf(attempt)).toMatchObject({
        orderId,
        storeId: store.storeId,
        status: 'delivered',
        attempts: 1,
        responseStatus: 204,
      });
    }
    const deliveries = await call(platform.baseUrl, 'GET', '/v1/marketfront/webhooks/deliveries', {
      apiKey: market.apiKey,
    });
    const deliveryIds = (deliveries.body.deliveries as { deliveryId: string }[]).map(
      (delivery) => delivery.deliveryId,
    );
    expect(deliveryIds.sort()).toEqual(tries.map((attempt) => dataOf(attempt).deliveryId).sort());

    // Nothing of it anywhere else: another store, another partner, the other mode.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(otherStore.events).toEqual([]);
    expect(strangerLive.events).toEqual([]);
    expect(marketTest.events).toEqual([]);
    // Heartbeats (every 500 ms here) keep the quiet ones open.
    await vi.waitFor(() => expect(otherStore.text()).toContain(': heartbeat'), { timeout: 5_000 });
    expect(otherStore.ended()).toBe(false);
  });

  it('streams a tenant’s orders whatever their store, and no other tenant’s', async () => {
    const market = await createPartner(platform.gatewayDb, {
      kind: 'distribution',
      name: 'live test partner',
      mode: 'test',
    });
    const other = await partner('distribution');
    const stream = await partnerStream(market.apiKey);
    const otherStream = await partnerStream(other.apiKey);
    // The console's EventSource: the session cookie instead of the key.
    const session = await call(platform.baseUrl, 'POST', '/v1/sessions', {
      body: { apiKey: market.apiKey },
    });
    expect(session.status, session.text).toBe(201);
    const cookie = session.headers.getSetCookie()[0]!.split(';')[0]!;
    const byCookie = await openSse(new URL('/v1/marketfront/events', platform.baseUrl), { cookie });
    streams.push(byCookie);
    expect(byCookie.status, byCookie.text()).toBe(200);
    const mine = randomUUID();
    const theirs = randomUUID();
    const ids = [
      await publishOrderEvent(env, {
        partnerId: market.testPartnerId,
        orderId: mine,
        storeId: randomUUID(),
        version: 1,
      }),
      // The partner's live tenant is another tenant: its orders stay out of the test stream.
      await publishOrderEvent(env, {
        partnerId: market.partnerId,
        orderId: theirs,
        storeId: randomUUID(),
        version: 1,
      }),
      await publishOrderEvent(env, {
        partnerId: other.partnerId,
        orderId: theirs,
        storeId: randomUUID(),
        version: 2,
      }),
    ];
    const [created] = await waitForEvents(stream, (event) => event.id === ids[0], 1);
    expect(created!.event).toBe('order.created');
    expect((await waitForEvents(byCookie, (event) => event.id === ids[0], 1))[0]).toEqual(created);
    const [otherEvent] = await waitForEvents(otherStream, (event) => event.id === ids[2], 1);
    expect(otherEvent!.event).toBe('order.status_changed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(about(stream, 'orderId', theirs)).toEqual([]);
    expect(about(byCookie, 'orderId', theirs)).toEqual([]);
    expect(otherStream.events.map((event) => event.id)).toEqual([ids[2]]);
  });

  it('answers another partner’s or mode’s store, and bad store ids, with a ProblemDetail before any stream', async () => {
    const owner = await partner('commerce');
    const intruder = await partner('commerce');
    const storeId = await emptyStore(owner.apiKey);
    const { apiKey: ownerTestKey } = await createKey(platform.gatewayDb, owner.partnerId, {
      mode: 'test',
    });
    for (const apiKey of [intruder.apiKey, ownerTestKey]) {
      const refused = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}/events`, {
        apiKey,
      });
      expect(refused.status, refused.text).toBe(404);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.body.errorCode).toBe('STORE_NOT_FOUND');
    }
    for (const bad of ['not-a-guid', `${'9'.repeat(4_000)}`, '%00%27%22%3Cscript%3E']) {
      const refused = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${bad}/events`, {
        apiKey: owner.apiKey,
      });
      expect(refused.status, refused.text).toBeGreaterThanOrEqual(400);
      expect(refused.status).toBeLessThan(500);
      expect(refused.body.errorCode, refused.text).toBeDefined();
    }
    // Each kind its own streams; no key, no stream.
    const market = await partner('distribution');
    const wrongKind = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeId}/events`, {
      apiKey: market.apiKey,
    });
    expect(wrongKind.body.errorCode, wrongKind.text).toBe('FORBIDDEN');
    const wrongArea = await call(platform.baseUrl, 'GET', '/v1/marketfront/events', {
      apiKey: owner.apiKey,
    });
    expect(wrongArea.body.errorCode, wrongArea.text).toBe('FORBIDDEN');
    const anonymous = await call(platform.baseUrl, 'GET', '/v1/marketfront/events');
    expect(anonymous.status, anonymous.text).toBe(401);
  });

  it('holds a few streams of a partner open at once, across its stores', async () => {
    const commerce = await partner('commerce');
    const storeIds = [await emptyStore(commerce.apiKey), await emptyStore(commerce.apiKey)];
    const held = await Promise.all(
      Array.from({ length: PER_PARTNER }, (_, index) =>
        storeStream(storeIds[index % 2]!, commerce.apiKey),
      ),
    );
    expect(held.map((stream) => stream.status)).toEqual(held.map(() => 200));
    const refused = await call(
      platform.baseUrl,
      'GET',
      `/v1/commerce/stores/${storeIds[0]}/events`,
      {
        apiKey: commerce.apiKey,
      },
    );
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.errorCode).toBe('RATE_LIMITED');
    // A closed stream gives its place back; a refused store check takes none.
    held[0]!.drop();
    const foreign = await emptyStore((await partner('commerce')).apiKey);
    await expect
      .poll(async () => {
        const notFound = await call(
          platform.baseUrl,
          'GET',
          `/v1/commerce/stores/${foreign}/events`,
          { apiKey: commerce.apiKey },
        );
        return notFound.status;
      })
      .toBe(404);
    const again = await storeStream(storeIds[1]!, commerce.apiKey);
    expect(again.status).toBe(200);
    const full = await call(platform.baseUrl, 'GET', `/v1/commerce/stores/${storeIds[1]}/events`, {
      apiKey: commerce.apiKey,
    });
    expect(full.status, full.text).toBe(429);
  });

  it('drops a client that never reads once its backlog passes the bound, and serves the others', async () => {
    const commerce = await partner('commerce');
    const storeId = await emptyStore(commerce.apiKey);
    const reader = await storeStream(storeId, commerce.apiKey);
    const stalled = await stalledStream(`/v1/commerce/stores/${storeId}/events`, commerce.apiKey);
    try {
      // About 100 KB each: far beyond what the socket buffers and the bound hold together.
      const count = 200;
      for (let version = 1; version <= count; version++) {
        await publishLargeStoreEvent(storeId, version);
      }
      const got = await waitForEvents(
        reader,
        (event) => event.event === 'store.items_availability_changed',
        count,
      );
      expect(got).toHaveLength(count);
      // The stalled stream was dropped: its place is free again (the cap is PER_PARTNER).
      const more = await Promise.all(
        Array.from({ length: PER_PARTNER - 1 }, () => storeStream(storeId, commerce.apiKey)),
      );
      expect(more.map((stream) => stream.status)).toEqual(more.map(() => 200));
      for (const stream of more) stream.drop();
    } finally {
      stalled.destroy();
    }
  }, 60_000);

  it('ends every stream at once when the gateway closes', async () => {
    const commerce = await partner('commerce');
    const storeId = await emptyStore(commerce.apiKey);
    const gateway = createLoneGateway(env, platform.gatewayDb);
    await gateway.start();
    const market = await partner('distribution');
    const open = [
      await storeStreamAt(gateway.url(), storeId, commerce.apiKey),
      await openSse(new URL('/v1/marketfront/events', gateway.url()), {
        authorization: `Bearer ${market.apiKey}`,
      }),
    ];
    expect(open.map((stream) => stream.status)).toEqual([200, 200]);
    const started = Date.now();
    await gateway.stop();
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect.poll(() => open.every((stream) => stream.ended()), { timeout: 2_000 }).toBe(true);
  });
});

function storeStreamAt(baseUrl: string, storeId: string, apiKey: string) {
  return openSse(new URL(`/v1/commerce/stores/${storeId}/events`, baseUrl), {
    authorization: `Bearer ${apiKey}`,
  });
}

/** A stream whose client reads its answer's head, then nothing more. */
async function stalledStream(path: string, apiKey: string): Promise<Socket> {
  const { hostname, port } = new URL(platform.baseUrl);
  const socket = connectTcp({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) =>
    socket.once('connect', resolve).once('error', reject),
  );
  socket.on('error', () => undefined);
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${apiKey}\r\n\r\n`,
  );
  const head = await new Promise<string>((resolve) =>
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString())),
  );
  expect(head).toMatch(/^HTTP\/1\.1 200/);
  socket.pause();
  return socket;
}

/** A store event of 1,000 items (about 100 KB) on the test's events stream. */
async function publishLargeStoreEvent(storeId: string, version: number) {
  const id = randomUUID();
  const envelope = {
    id,
    type: 'stores.v1.store-changed',
    occurredAt: new Date().toISOString(),
    version,
    data: {
      event: 'store.items_availability_changed',
      storeId,
      itemAvailabilityVersion: version,
      items: Array.from({ length: 1_000 }, () => ({
        itemId: randomUUID(),
        available: false,
        until: null,
      })),
      mode: 'live',
    },
  };
  expect(events.storeChanged.schema.safeParse(envelope).success).toBe(true);
  await env.nc
    .jetstream()
    .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope), {
      msgID: id,
    });
}
