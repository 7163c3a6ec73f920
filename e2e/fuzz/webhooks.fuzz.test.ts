import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { call } from '../http.js';
import { seedPlacedOrder } from '../seed-order.js';
import { startWebhookReceiver, type WebhookReceiver } from '../webhook-receiver.js';
import { startProcessPlatform, type ProcessPlatform } from './process-platform.js';

/**
 * Hostile webhook receivers, registered through the API and fed by real order status
 * changes (ordering as its own process): a slow drip, a huge answer, redirects to private
 * and metadata addresses, an answer that never comes, garbage instead of HTTP. Their
 * deliveries fail and are retried per the contract, a well-behaved partner's webhooks
 * still arrive promptly, and no process restarts or grows past its bound.
 * (webhooks.e2e.test.ts covers a hanging receiver alone and a private URL registered directly.)
 */

/** One try's limit in this file: the slow receivers end by it. */
const WEBHOOK_TIMEOUT_MS = 1_000;
const RETRY_SCHEDULE_MS = [0, 500, 1_000];
/** A healthy partner's webhook arrives within this of its change (queued behind hostile ones: 20 s). */
const HEALTHY_LAG_MS = 5_000;
const MAX_SERVICE_RSS_MB = Number(process.env.FUZZ_MAX_RSS_MB ?? 700);

let env: TestEnvironment;
let running: ProcessPlatform;
let commerce: { partnerId: string; apiKey: string };
let storeId: string;
let hostile: Server;
let hostileBase: string;
let healthyReceiver: WebhookReceiver;
/** A receiver on 127.0.0.1 (allowed) that redirects must never reach. */
let redirectTarget: WebhookReceiver;
const sockets = new Set<Socket>();
/** Bytes the huge receiver managed to write: the sender must stop reading long before 200 MB. */
let hugeBytesSent = 0;
const timers = new Set<NodeJS.Timeout>();

type Behaviour = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Receivers whose 2xx counts as delivered whatever follows it (only the status is read, and
 * at most 4 KB of the body): their deliveries may succeed. Every other one must fail.
 */
const MAY_DELIVER = new Set(['huge', 'huge-declared']);

/** What each hostile receiver path does with a delivery. */
const behaviours: Record<string, Behaviour> = {
  // Status and headers at once, then one byte every 100 ms, never finishing.
  'slow-drip': (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => response.write('.'), 100);
    timers.add(timer);
    response.on('close', () => clearInterval(timer));
  },
  // The status line itself dripped, a byte every 150 ms.
  'slow-headers': (request) => {
    const line = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n';
    let index = 0;
    const timer = setInterval(() => {
      if (index < line.length) request.socket.write(line[index++]!);
    }, 150);
    timers.add(timer);
    request.socket.on('close', () => clearInterval(timer));
  },
  // A 2xx with a 200 MB body, as fast as it is read.
  huge: (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    let sent = 0;
    const pump = () => {
      while (!response.destroyed && sent < 200 * 1024 * 1024 && response.write(chunk)) {
        sent += chunk.length;
        hugeBytesSent += chunk.length;
      }
      if (response.destroyed) return;
      if (sent >= 200 * 1024 * 1024) response.end();
      else response.once('drain', pump);
    };
    pump();
  },
  // A huge declared body (Content-Length) that never comes.
  'huge-declared': (_request, response) => {
    response.writeHead(200, { 'content-length': String(10 * 1024 * 1024 * 1024) });
  },
  'redirect-loopback': (_request, response) => {
    response.writeHead(307, { location: redirectTarget.url }).end();
  },
  'redirect-metadata': (_request, response) => {
    response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
  },
  'redirect-private': (_request, response) => {
    response.writeHead(308, { location: 'http://10.0.0.1/hooks' }).end();
  },
  'never-answers': () => undefined,
  // Bytes that are not HTTP at all.
  garbage: (request) => {
    request.socket.end(Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x0d]));
  },
  // A header block larger than any client keeps.
  'huge-headers': (request) => {
    request.socket.write(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(1024 * 1024)}\r\n\r\n`);
  },
};

beforeAll(async () => {
  env = await createTestEnvironment();
  running = await startProcessPlatform(env, {
    serviceEnv: {
      ordering: {
        WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
        WEBHOOK_CONNECT_TIMEOUT_MS: '500',
        WEBHOOK_RETRY_SCHEDULE_MS: RETRY_SCHEDULE_MS.join(','),
        WEBHOOK_POLL_MS: '100',
        // Retries are what this file watches: a breaker pausing them stays short.
        WEBHOOK_BREAKER_RESET_MS: '1000',
      },
    },
  });
  hostile = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const behaviour = behaviours[(request.url ?? '').slice(1)];
      if (behaviour) behaviour(request, response);
      else response.writeHead(404).end();
    });
  });
  hostile.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  hostileBase = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
  healthyReceiver = await startWebhookReceiver();
  redirectTarget = await startWebhookReceiver();

  commerce = await running.platform.newPartner('commerce');
  storeId = randomUUID();
  const created = await call(running.platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile(),
  });
  expect(created.status).toBe(201);
}, 300_000);

afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => (hostile ? hostile.close(() => resolve()) : resolve()));
  await healthyReceiver?.close();
  await redirectTarget?.close();
  await running?.stop();
  await env?.cleanup();
});

/** A distribution partner with its endpoint at `url`, registered through the API. */
async function subscribed(url: string) {
  const partner = await running.platform.newPartner('distribution');
  const put = await call(running.platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', {
    apiKey: partner.apiKey,
    body: { url, events: ['order.created', 'order.status_changed', 'order.cancelled'] },
  });
  expect(put.status, put.text).toBe(201);
  return partner;
}

/** An order of `placer` at the store, then confirmed by the store through the API. */
async function orderWithChange(placer: { partnerId: string }): Promise<string> {
  const orderId = await seedPlacedOrder(running.platform.orderingDb, env.prefix, {
    store: storeId,
    storePartner: commerce,
    placer,
  });
  const moved = await call(
    running.platform.baseUrl,
    'POST',
    `/v1/commerce/orders/${orderId}/status`,
    { apiKey: commerce.apiKey, body: { status: 'confirmed' } },
  );
  expect(moved.status, moved.text).toBe(200);
  return orderId;
}

interface Delivery {
  status: string;
  attempts: number;
  lastResponseStatus: number | null;
  lastError: string | null;
}

async function deliveriesOf(apiKey: string): Promise<Delivery[]> {
  const page = await call(running.platform.baseUrl, 'GET', '/v1/marketfront/webhooks/deliveries', {
    apiKey,
  });
  expect(page.status, page.text).toBe(200);
  return page.body.deliveries as Delivery[];
}

describe('hostile webhook receivers', () => {
  it('fail and retry their own deliveries while a healthy partner gets its webhooks promptly', async () => {
    const hostilePartners = await Promise.all(
      Object.keys(behaviours).map(async (name) => ({
        name,
        partner: await subscribed(`${hostileBase}/${name}`),
      })),
    );
    const healthy = await subscribed(healthyReceiver.url);

    // Every hostile partner's orders change status first, two orders each.
    for (const { partner } of hostilePartners) {
      await orderWithChange(partner);
      await orderWithChange(partner);
    }
    // Then the healthy partner's: both its events arrive within a few seconds of its change,
    // although 20 hostile orders' tries (1 s each, if they queued) are in flight.
    for (let round = 0; round < 3; round++) {
      const before = healthyReceiver.received.length;
      const started = Date.now();
      await orderWithChange(healthy);
      await healthyReceiver.waitFor(before + 2, () => true, 10_000);
      expect(Date.now() - started, 'healthy delivery lag').toBeLessThan(HEALTHY_LAG_MS);
    }

    // Each hostile partner's deliveries fail with a reason and are retried per the schedule.
    for (const { name, partner } of hostilePartners) {
      if (MAY_DELIVER.has(name)) {
        await expect
          .poll(async () => (await deliveriesOf(partner.apiKey)).length, { timeout: 30_000 })
          .toBeGreaterThanOrEqual(4);
        continue;
      }
      await expect
        .poll(
          async () => {
            const deliveries = await deliveriesOf(partner.apiKey);
            return deliveries.some(
              (delivery) =>
                (delivery.status === 'failed' || delivery.status === 'dead') &&
                delivery.attempts >= 2,
            );
          },
          { timeout: 30_000, interval: 250, message: `${name}: a delivery retried` },
        )
        .toBe(true);
      const deliveries = await deliveriesOf(partner.apiKey);
      for (const delivery of deliveries) {
        expect(delivery.status, `${name}: ${JSON.stringify(delivery)}`).not.toBe('delivered');
        if (delivery.lastError !== null) {
          expect(delivery.lastError).not.toMatch(/\n\s+at |Error:|node_modules/);
          expect(delivery.lastError.length).toBeLessThan(500);
        }
      }
      if (name.startsWith('redirect')) {
        const answered = deliveries.find((delivery) => delivery.lastResponseStatus !== null);
        expect(answered?.lastResponseStatus).toBeGreaterThanOrEqual(300);
        expect(answered?.lastResponseStatus).toBeLessThan(400);
      }
    }
    expect(hugeBytesSent, 'bytes of the huge answer the sender let through').toBeLessThan(
      64 * 1024 * 1024,
    );
    // No redirect was followed, not even to an address the allow-list admits.
    expect(redirectTarget.received).toHaveLength(0);
  }, 120_000);

  it('left every service process running (same PID), answering, within its memory bound', async () => {
    await running.expectHealthy('webhooks', MAX_SERVICE_RSS_MB);
  });
});
