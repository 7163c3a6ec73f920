/**
 * Store operations across the services (docs/guide/stores.md, docs/guide/orders.md): a kitchen
 * denies an order with the item that ran out and carts refuse it until the store's local
 * midnight; an override reaches every ordering replica's next validate; store events reach
 * every subscribed partner in order while another partner's endpoint hangs.
 */
import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { events } from '@pcp/contracts';
import { createOrderingService, orderingEnvSchema } from '@pcp/ordering';
import { loadConfig } from '@pcp/service-kit';
import type { Subscription } from 'nats';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** Sunday 2026-03-08 in Chicago is 23 hours long: clocks go forward at 02:00. */
const DST_SUNDAY_EVENING = new Date('2026-03-09T01:00:00Z'); // 20:00 CDT
/** Its local midnight: 24:00 CDT, five hours after UTC midnight (a 24-hour day would say six). */
const END_OF_DST_SUNDAY = new Date('2026-03-09T05:00:00Z');

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { partnerId: string; apiKey: string; client: PlatformClient };
let distribution: { partnerId: string; apiKey: string; client: PlatformClient };
let now = DST_SUNDAY_EVENING;
const receivers: WebhookReceiver[] = [];
let storeEvents: Subscription;
const published: ReturnType<typeof events.storeChanged.schema.parse>[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    clock: () => now,
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_POLL_MS: '100',
    },
  });
  host = await startCatalogHost();
  storeEvents = env.nc.subscribe(`${env.prefix}.${events.storeChanged.subject}`, {
    callback: (_error, msg) => published.push(events.storeChanged.schema.parse(msg.json())),
  });
  const withClient = async (kind: 'commerce' | 'distribution') => {
    const partner = await platform.newPartner(kind);
    return {
      ...partner,
      client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
    };
  };
  [commerce, distribution] = await Promise.all([
    withClient('commerce'),
    withClient('distribution'),
  ]);
});

afterAll(async () => {
  storeEvents?.unsubscribe();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const cartAdd = (storeId: string, catalogSetId: string, itemId: string) =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
    apiKey: distribution.apiKey,
    body: { catalogSetId, storeId, item: { itemId, lineItemId: randomUUID(), quantity: 1 } },
  });

const validate = (body: unknown, endUser: string) =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/orders/validate', {
    apiKey: distribution.apiKey,
    body,
    headers: { 'X-End-User-Id': endUser },
  });

const codesOf = (body: { errors?: { code: string }[] }) => (body.errors ?? []).map((e) => e.code);

describe('deny with the items that ran out', () => {
  it('makes them unavailable to carts until the local midnight of a 23-hour day', async () => {
    now = DST_SUNDAY_EVENING;
    const { storeId, ids } = await storeWithSodas(commerce.client, host, {
      orderSubmissionUrl: undefined,
    });
    const buyer = await newBuyer(distribution.client, '4242424242424242');
    const placed = await distribution.client.POST('/v1/marketfront/orders/place', {
      params: { header: { 'Idempotency-Key': randomUUID(), 'X-End-User-Id': buyer.endUser } },
      body: sodaOrder(ids, storeId, buyer.paymentId),
    });
    expect(placed.response.status).toBe(201);
    const orderId = placed.data!.orderId;
    expect(placed.data!.status).toBe('pending');
    // Pickup ASAP: placed (the injected clock) plus the store's 15 pickup minutes.
    expect(Date.parse(placed.data!.estimatedReadyAt!)).toBe(now.getTime() + 15 * 60_000);

    const denied = await call(platform.baseUrl, 'POST', `/v1/commerce/orders/${orderId}/status`, {
      apiKey: commerce.apiKey,
      body: { state: 'cancelled', cancelReason: 'Out of soda', unavailableItemIds: [ids.soda] },
    });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ state: 'cancelled', cancelledBy: 'store' });

    const overrides = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${storeId}/item-availability`,
      { apiKey: distribution.apiKey },
    );
    expect(overrides.status).toBe(200);
    expect(overrides.body.items).toEqual([
      { itemId: ids.soda, available: false, until: END_OF_DST_SUNDAY.toISOString() },
    ]);

    const refused = await cartAdd(storeId, ids.catalogSetId, ids.soda);
    expect(refused.status).toBe(400);
    expect(codesOf(refused.body)).toEqual(['ITEM_UNAVAILABLE']);
    const otherItem = await cartAdd(storeId, ids.catalogSetId, ids.pancakes);
    expect(otherItem.status).toBe(200);

    now = new Date(END_OF_DST_SUNDAY.getTime() - 1_000);
    expect((await cartAdd(storeId, ids.catalogSetId, ids.soda)).status).toBe(400);
    now = END_OF_DST_SUNDAY;
    expect((await cartAdd(storeId, ids.catalogSetId, ids.soda)).status).toBe(200);
  });

  it('refuses ids that are not items of the catalog, and keeps the order open', async () => {
    now = DST_SUNDAY_EVENING;
    const { storeId, ids } = await storeWithSodas(commerce.client, host, {
      orderSubmissionUrl: undefined,
    });
    const buyer = await newBuyer(distribution.client, '4242424242424242');
    const placed = await distribution.client.POST('/v1/marketfront/orders/place', {
      params: { header: { 'Idempotency-Key': randomUUID(), 'X-End-User-Id': buyer.endUser } },
      body: sodaOrder(ids, storeId, buyer.paymentId),
    });
    const orderId = placed.data!.orderId;
    const unknown = randomUUID();
    const denied = await call(platform.baseUrl, 'POST', `/v1/commerce/orders/${orderId}/status`, {
      apiKey: commerce.apiKey,
      body: { state: 'cancelled', cancelReason: 'Out', unavailableItemIds: [ids.soda, unknown] },
    });
    expect(denied.status).toBe(400);
    expect(denied.body.errors).toEqual([
      expect.objectContaining({ pointer: '/unavailableItemIds/1' }),
    ]);
    const order = await distribution.client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId } },
    });
    expect(order.data).toMatchObject({ state: 'open', status: 'pending' });
    expect((await cartAdd(storeId, ids.catalogSetId, ids.soda)).status).toBe(200);
  });
});

describe('item availability on every ordering replica', () => {
  it('reaches the next validate on either replica, with no cache to expire', async () => {
    now = DST_SUNDAY_EVENING;
    const second = createOrderingService({
      ...platform.serviceDeps('ordering'),
      db: platform.orderingDb,
      config: loadConfig(orderingEnvSchema, {}),
      clock: () => now,
    });
    await second.start();
    try {
      const { storeId, ids } = await storeWithSodas(commerce.client, host, {
        orderSubmissionUrl: undefined,
      });
      const buyer = await newBuyer(distribution.client, '4242424242424242');
      const body = sodaOrder(ids, storeId, buyer.paymentId);
      // Both replicas answer (a queue group): warm each one's caches.
      for (let i = 0; i < 10; i++)
        expect((await validate(body, buyer.endUser)).body.isValid).toBe(true);

      const put = await call(
        platform.baseUrl,
        'PUT',
        `/v1/commerce/stores/${storeId}/item-availability`,
        {
          apiKey: commerce.apiKey,
          body: { items: [{ itemId: ids.soda, available: false, until: null }] },
        },
      );
      expect(put.status).toBe(200);
      for (let i = 0; i < 10; i++) {
        const answer = await validate(body, buyer.endUser);
        expect(answer.body.isValid).toBe(false);
        expect(codesOf(answer.body)).toContain('ITEM_UNAVAILABLE');
      }

      const cleared = await call(
        platform.baseUrl,
        'PUT',
        `/v1/commerce/stores/${storeId}/item-availability`,
        { apiKey: commerce.apiKey, body: { items: [{ itemId: ids.soda, available: true }] } },
      );
      expect(cleared.status).toBe(200);
      for (let i = 0; i < 10; i++)
        expect((await validate(body, buyer.endUser)).body.isValid).toBe(true);
    } finally {
      await second.stop(5_000);
    }
  });
});

describe('store events', () => {
  it('reach every subscribed partner in order per store while another endpoint hangs', async () => {
    now = new Date();
    const [steady, hanging] = await Promise.all([startWebhookReceiver(), startWebhookReceiver()]);
    receivers.push(steady, hanging);
    hanging.answer = () => 'hang';
    const kinds = [
      'store.status_changed',
      'store.hours_changed',
      'store.items_availability_changed',
      'catalog.activated',
    ];
    for (const receiver of [steady, hanging]) {
      const partner = await platform.newPartner('distribution');
      const put = await call(platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', {
        apiKey: partner.apiKey,
        body: { url: receiver.url, events: kinds },
      });
      expect(put.status).toBeLessThan(300);
    }
    const { storeId, ids } = await storeWithSodas(commerce.client, host, {
      orderSubmissionUrl: undefined,
    });
    const status = (body: unknown) =>
      call(platform.baseUrl, 'POST', `/v1/commerce/stores/${storeId}/status`, {
        apiKey: commerce.apiKey,
        body,
      });
    expect((await status({ status: 'busy', extraPrepMinutes: 20 })).status).toBe(200);
    const hours = await call(
      platform.baseUrl,
      'PUT',
      `/v1/commerce/stores/${storeId}/special-hours`,
      {
        apiKey: commerce.apiKey,
        body: { days: [{ date: '2026-12-25', closed: true }] },
      },
    );
    expect(hours.status).toBe(200);
    const items = await call(
      platform.baseUrl,
      'PUT',
      `/v1/commerce/stores/${storeId}/item-availability`,
      { apiKey: commerce.apiKey, body: { items: [{ itemId: ids.burger, available: false }] } },
    );
    expect(items.status).toBe(200);
    expect((await status({ status: 'online' })).status).toBe(200);

    const ofStore = (request: { payload?: { data?: { storeId?: string } } }) =>
      request.payload?.data?.storeId === storeId;
    const got = await steady.waitFor(5, ofStore, 15_000);
    expect(got.map((request) => request.payload.type)).toEqual([
      'catalog.activated',
      'store.status_changed',
      'store.hours_changed',
      'store.items_availability_changed',
      'store.status_changed',
    ]);
    const versions = got.map((request) => request.payload.data.version as number);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    expect(got[1]!.payload.data).toMatchObject({ status: 'busy', extraPrepMinutes: 20 });
    // The hanging endpoint was tried, and held nobody else up.
    expect(hanging.received.filter(ofStore).length).toBeGreaterThan(0);
    expect(published.filter((event) => event.data.storeId === storeId).length).toBe(5);
  });
});
