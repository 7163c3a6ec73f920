// The lists the partner console reads (docs/guide/catalogs.md#listing-ingests,
// docs/guide/orders.md#listing-your-orders, docs/guide/orders.md#an-orders-timeline): their
// order, pages and filters, other partners' data never in them, hostile queries answered
// with ProblemDetails, and an order's timeline step by step with its webhook tries.
import {
  createPlatformClient,
  ingestCatalog,
  type components,
  type operations,
  type PlatformClient,
} from '@pcp/client';
import { sessionCookieName } from '@pcp/contracts';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { refundSettled } from './orders.js';
import { createStore } from './ingest.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';
import { seedPlacedOrder } from './seed-order.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

type Partner = { partnerId: string; apiKey: string; client: PlatformClient };
type StatusChange = operations['changeOrderStatus']['requestBody']['content']['application/json'];
type TimelineEvent = components['schemas']['OrderTimeline']['events'][number];
type WebhookTry = Extract<TimelineEvent, { kind: 'webhook' }>;
const isTry = (event: TimelineEvent): event is WebhookTry => event.kind === 'webhook';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let receiver: WebhookReceiver;
let commerce: Partner;
let otherCommerce: Partner;
/** Places real orders (the timeline's). */
let market: Partner;
/** Its orders are seeded (the list's). */
let lister: Partner;
let otherMarket: Partner;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_RETRY_SCHEDULE_MS: '0,100,100,100',
    },
  });
  host = await startCatalogHost();
  receiver = await startWebhookReceiver();
  const partner = async (
    kind: 'commerce' | 'distribution',
    options?: { paymentTypes: ['CARD'] },
  ): Promise<Partner> => {
    const created = await platform.newPartner(kind, options);
    return {
      ...created,
      client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: created.apiKey }),
    };
  };
  [commerce, otherCommerce, market, lister, otherMarket] = await Promise.all([
    partner('commerce'),
    partner('commerce'),
    partner('distribution', { paymentTypes: ['CARD'] }),
    partner('distribution'),
    partner('distribution'),
  ]);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const get = (path: string, apiKey: string) => call(platform.baseUrl, 'GET', path, { apiKey });

function expectProblem(result: HttpResult, status: number, errorCode: string) {
  expect(result.status, result.text).toBe(status);
  expect(result.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(result.body).toMatchObject({ status, errorCode });
  expect(result.body.requestId).toBe(result.headers.get('x-request-id'));
}

/** Query strings no list takes: each is 400 REQUEST_INVALID, never a 500 or a full list. */
const hostileQueries = [
  'limit=0',
  'limit=101',
  'limit=abc',
  'limit=',
  'before=',
  'before=not%20a%20cursor',
  `before=${Buffer.from('2026-02-30T10:00:00.000000Z|0b9d7e4c-6a2f-4f1e-8c3d-2a1b0c9d8e7f').toString('base64url')}`,
  `before=${Buffer.from('anything at all').toString('base64url')}`,
  `before=${'A'.repeat(8_000)}`,
  'limit=5&limit=6',
  'unknown=1',
  'Limit=5',
];

describe('GET /v1/commerce/stores/{storeId}/catalog-ingests', () => {
  let storeId: string;
  /** The runs' ids, oldest first: succeeded, failed, succeeded. */
  const runs: string[] = [];

  beforeAll(async () => {
    storeId = await createStore(platform.baseUrl, commerce.apiKey);
    const catalog = cartTestCatalog(storeId);
    const repriced = structuredClone(catalog.document);
    for (const item of Object.values(repriced.items)) item.basePrice += 1;
    for (const document of [catalog.document, { catalogSetId: 'not a guid' }, repriced]) {
      const ingest = await ingestCatalog(commerce.client, {
        storeId,
        callbackUrl: host.serveJson(`/${randomUUID()}.json`, document),
        timeoutMs: 30_000,
      });
      runs.push(ingest.catalogIngestId);
    }
  }, 90_000);

  const list = (query: { limit?: number; before?: string } = {}, client = commerce.client) =>
    client.GET('/v1/commerce/stores/{storeId}/catalog-ingests', {
      params: { path: { storeId }, query },
    });

  it('lists the runs newest first with their state, times, summary and error count', async () => {
    const { data, response } = await list();
    expect(response.status).toBe(200);
    expect(data!.nextCursor).toBeUndefined();
    expect(data!.ingests.map((run) => run.catalogIngestId)).toEqual([...runs].reverse());
    const [latest, failed, first] = data!.ingests;
    expect(latest).toMatchObject({ state: 'succeeded', errorCount: 0 });
    expect(latest!.changeSummary).toMatchObject({ added: 0, removed: 0 });
    expect(latest!.changeSummary!.priceChanged).toBeGreaterThan(0);
    expect(first).toMatchObject({ state: 'succeeded', errorCount: 0 });
    expect(first!.changeSummary!.added).toBeGreaterThan(0);
    const status = await commerce.client.GET(
      '/v1/commerce/stores/{storeId}/catalog-ingest/{catalogIngestId}/status',
      { params: { path: { storeId, catalogIngestId: failed!.catalogIngestId } } },
    );
    expect(failed).toMatchObject({ state: 'failed', errorCount: status.data!.errors.length });
    expect(failed!.errorCount).toBeGreaterThan(0);
    expect(failed!.changeSummary).toBeUndefined();
    for (const run of data!.ingests) {
      expect(run.startedAt, JSON.stringify(run)).toBeDefined();
      expect(run.finishedAt, JSON.stringify(run)).toBeDefined();
      expect(Date.parse(run.createdAt)).toBeLessThanOrEqual(Date.parse(run.startedAt!));
      expect(Date.parse(run.startedAt!)).toBeLessThanOrEqual(Date.parse(run.finishedAt!));
    }
  });

  it('pages with limit and the opaque before cursor, to the same runs', async () => {
    const seen: string[] = [];
    let before: string | undefined;
    for (let page = 0; page < 5; page++) {
      const { data } = await list({ limit: 1, ...(before ? { before } : {}) });
      expect(data!.ingests).toHaveLength(1);
      seen.push(data!.ingests[0]!.catalogIngestId);
      before = data!.nextCursor;
      if (!before) break;
    }
    expect(seen).toEqual([...runs].reverse());
    const two = await list({ limit: 2 });
    const rest = await list({ limit: 2, before: two.data!.nextCursor! });
    expect(rest.data!.ingests.map((run) => run.catalogIngestId)).toEqual([runs[0]]);
    expect(rest.data!.nextCursor).toBeUndefined();
  });

  it("answers another partner's store, and an unknown one, 404 STORE_NOT_FOUND", async () => {
    const path = `/v1/commerce/stores/${storeId}/catalog-ingests`;
    expectProblem(await get(path, otherCommerce.apiKey), 404, 'STORE_NOT_FOUND');
    expectProblem(
      await get(`/v1/commerce/stores/${randomUUID()}/catalog-ingests`, commerce.apiKey),
      404,
      'STORE_NOT_FOUND',
    );
    // A distribution key has no commerce routes.
    expectProblem(await get(path, market.apiKey), 403, 'FORBIDDEN');
  });

  it('answers hostile queries and a malformed store id 400 REQUEST_INVALID', async () => {
    for (const query of hostileQueries) {
      const answer = await get(
        `/v1/commerce/stores/${storeId}/catalog-ingests?${query}`,
        commerce.apiKey,
      );
      expectProblem(answer, 400, 'REQUEST_INVALID');
    }
    const cursor = await get(
      `/v1/commerce/stores/${storeId}/catalog-ingests?before=bm90LWEtY3Vyc29y`,
      commerce.apiKey,
    );
    expect(cursor.body.errors).toEqual([expect.objectContaining({ pointer: '/before' })]);
    expectProblem(
      await get('/v1/commerce/stores/not-a-store/catalog-ingests', commerce.apiKey),
      400,
      'REQUEST_INVALID',
    );
  });
});

describe('GET /v1/marketfront/orders', () => {
  let storeId: string;
  /** The lister's orders, newest first. */
  const orders: string[] = [];

  beforeAll(async () => {
    storeId = await createStore(platform.baseUrl, commerce.apiKey);
    const start = Date.now() - 60_000;
    for (let index = 0; index < 5; index++) {
      orders.unshift(
        await seedPlacedOrder(platform.orderingDb, env.prefix, {
          store: storeId,
          storePartner: commerce,
          placer: lister,
          createdAt: new Date(start + index * 1_000),
        }),
      );
    }
    // Another partner's order at the same store, placed last.
    await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer: otherMarket,
    });
    // The second newest moves on: the status filter finds it alone.
    const confirmed = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId: orders[1]! } },
      body: { status: 'confirmed' },
    });
    expect(confirmed.response.status).toBe(200);
  });

  type Query = { limit?: number; before?: string; status?: 'pending' | 'confirmed' };
  const list = (query: Query = {}, client = lister.client) =>
    client.GET('/v1/marketfront/orders', { params: { query } });

  it("lists the partner's orders newest first as summaries", async () => {
    const { data, response } = await list();
    expect(response.status).toBe(200);
    expect(data!.orders.map((order) => order.orderId)).toEqual(orders);
    expect(data!.nextCursor).toBeUndefined();
    expect(data!.orders[1]).toMatchObject({
      storeId,
      state: 'open',
      status: 'confirmed',
      total: 23.64,
      currency: 'USD',
    });
    const [newest] = data!.orders;
    expect(newest!.placedAt).toBe(newest!.updatedAt);
    expect(Date.parse(data!.orders[1]!.updatedAt)).toBeGreaterThan(
      Date.parse(data!.orders[1]!.placedAt),
    );
  });

  it('pages with limit and before, and filters by status', async () => {
    const seen: string[] = [];
    let before: string | undefined;
    for (let page = 0; page < 5 && (page === 0 || before); page++) {
      const { data } = await list({ limit: 2, ...(before ? { before } : {}) });
      seen.push(...data!.orders.map((order) => order.orderId));
      before = data!.nextCursor;
    }
    expect(seen).toEqual(orders);
    const confirmed = await list({ status: 'confirmed' });
    expect(confirmed.data!.orders.map((order) => order.orderId)).toEqual([orders[1]]);
    const pending = await list({ status: 'pending', limit: 3 });
    expect(pending.data!.orders.map((order) => order.orderId)).toEqual([
      orders[0],
      orders[2],
      orders[3],
    ]);
    const last = await list({ status: 'pending', limit: 3, before: pending.data!.nextCursor! });
    expect(last.data!.orders.map((order) => order.orderId)).toEqual([orders[4]]);
  });

  it("never lists another partner's orders", async () => {
    const { data } = await list({ limit: 100 }, otherMarket.client);
    expect(data!.orders).toHaveLength(1);
    expect(orders).not.toContain(data!.orders[0]!.orderId);
    expect((await list({}, market.client)).data!.orders).toEqual([]);
    expectProblem(await get('/v1/marketfront/orders', commerce.apiKey), 403, 'FORBIDDEN');
  });

  it('answers hostile queries 400 REQUEST_INVALID', async () => {
    for (const query of [...hostileQueries, 'status=shipped', 'status=', 'status[]=pending']) {
      expectProblem(
        await get(`/v1/marketfront/orders?${query}`, lister.apiKey),
        400,
        'REQUEST_INVALID',
      );
    }
  });
});

describe('GET /v1/marketfront/orders/{orderId}/timeline', () => {
  let storeId: string;
  let ids: ReturnType<typeof cartTestCatalog>['ids'];
  let buyer: { endUser: string; paymentId: string };

  beforeAll(async () => {
    ({ storeId, ids } = await storeWithSodas(commerce.client, host, {
      orderSubmissionUrl: undefined,
    }));
    buyer = await newBuyer(market.client, '4242424242424242');
    const endpoint = await market.client.PUT('/v1/marketfront/webhooks', {
      body: {
        url: receiver.url,
        events: ['order.created', 'order.status_changed', 'order.cancelled'],
      },
    });
    expect(endpoint.response.status).toBe(201);
  }, 60_000);

  async function place(): Promise<string> {
    const { data, response } = await market.client.POST('/v1/marketfront/orders/place', {
      params: { header: { 'X-End-User-Id': buyer.endUser, 'Idempotency-Key': randomUUID() } },
      body: sodaOrder(ids, storeId, buyer.paymentId),
    });
    expect(response.status).toBe(201);
    return data!.orderId;
  }

  const move = async (orderId: string, body: StatusChange) => {
    const { response } = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
      params: { path: { orderId } },
      body,
    });
    expect(response.status).toBe(200);
  };

  const timeline = async (orderId: string, client = market.client) => {
    const { data, response } = await client.GET('/v1/marketfront/orders/{orderId}/timeline', {
      params: { path: { orderId } },
    });
    expect(response.status).toBe(200);
    return data!;
  };

  /** The timeline once each of the order's versions has a delivered webhook try. */
  async function settledTimeline(
    orderId: string,
    versions: number,
    timeout = 15_000,
  ): Promise<TimelineEvent[]> {
    let events: TimelineEvent[] = [];
    await expect
      .poll(
        async () => {
          events = (await timeline(orderId)).events;
          return new Set(
            events.flatMap((event) =>
              event.kind === 'webhook' && event.outcome === 'delivered' ? [event.version] : [],
            ),
          ).size;
        },
        { timeout, interval: 100 },
      )
      .toBe(versions);
    return events;
  }

  /** Every event but the webhook tries, as kind and what it says. */
  const steps = (events: TimelineEvent[]) =>
    events.flatMap((event) => {
      switch (event.kind) {
        case 'placed':
          return ['placed'];
        case 'payment':
          return [`payment ${event.action} ${event.amount} ${event.currency}`];
        case 'store':
          return [`store ${event.action}${event.reason ? `: ${event.reason}` : ''}`];
        case 'status':
          return [`v${event.version} ${event.previousStatus ?? '-'} → ${event.status}`];
        case 'webhook':
          return [];
      }
    });

  it('shows a placed, accepted and moved order step by step, with every webhook try', async () => {
    // The first try of the order's first event fails: it is tried again, and both show.
    const orderId = await place();
    receiver.answer = (request) =>
      request.payload?.data?.orderId === orderId &&
      receiver.received.filter((seen) => seen.payload?.data?.orderId === orderId).length === 1
        ? { status: 500 }
        : { status: 204 };
    await receiver.waitFor(2, (request) => request.payload?.data?.orderId === orderId);
    await move(orderId, { status: 'confirmed' });
    await move(orderId, { status: 'preparing' });
    await move(orderId, { status: 'ready' });
    await move(orderId, { state: 'completed' });

    const events = await settledTimeline(orderId, 5);
    expect(steps(events)).toEqual([
      'placed',
      'payment authorized 23.64 USD',
      'payment captured 23.64 USD',
      'v1 - → pending',
      'store accepted',
      'v2 pending → confirmed',
      'v3 confirmed → preparing',
      'v4 preparing → ready',
      'v5 ready → completed',
    ]);
    const times = events.map((event) => Date.parse(event.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));

    const tries = events.filter(isTry);
    const first = tries.filter((event) => event.version === 1);
    expect(first).toEqual([
      expect.objectContaining({
        eventType: 'order.created',
        attempt: 1,
        outcome: 'failed',
        responseStatus: 500,
        error: 'the endpoint answered HTTP 500',
      }),
      expect.objectContaining({
        eventType: 'order.created',
        attempt: 2,
        outcome: 'delivered',
        responseStatus: 204,
        error: null,
      }),
    ]);
    expect(first[0]!.deliveryId).toBe(first[1]!.deliveryId);
    expect(tries.filter((event) => event.version > 1)).toEqual(
      [2, 3, 4, 5].map((version) =>
        expect.objectContaining({
          eventType: 'order.status_changed',
          version,
          attempt: 1,
          outcome: 'delivered',
          responseStatus: 204,
        }),
      ),
    );
    // Each try comes after the change it announces, and took some time.
    const changedAt = new Map(
      events.flatMap((event) => (event.kind === 'status' ? [[event.version, event.at]] : [])),
    );
    for (const event of tries) {
      expect(event.latencyMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(event.at)).toBeGreaterThanOrEqual(
        Date.parse(changedAt.get(event.version)!),
      );
    }
  });

  it('shows a denial with its reason and the refund once it is made', async () => {
    const orderId = await place();
    await move(orderId, { state: 'cancelled', cancelReason: 'Out of soda' });
    await refundSettled(platform, orderId);
    const events = await settledTimeline(orderId, 2);
    expect(steps(events)).toEqual([
      'placed',
      'payment authorized 23.64 USD',
      'payment captured 23.64 USD',
      'v1 - → pending',
      'store denied: Out of soda',
      'v2 pending → cancelled',
      'payment refunded 23.64 USD',
    ]);
    expect(events.find((event) => event.kind === 'status' && event.version === 2)).toMatchObject({
      state: 'cancelled',
      cancelledBy: 'store',
    });
  });

  it('keeps 100 status events (the first two and the most recent) and the 200 most recent tries, counting the rest', async () => {
    const orderId = await place();
    await move(orderId, { status: 'confirmed' });
    // The store moves its estimate 100 times: versions 3 to 102.
    const soon = Date.now() + 3_600_000;
    for (let step = 0; step < 100; step++) {
      const estimatedReadyAt = new Date(soon + step * 60_000).toISOString();
      await move(orderId, { status: 'confirmed', estimatedReadyAt });
    }
    const delivered = await settledTimeline(orderId, 102, 60_000);
    const realTries = delivered.filter(isTry);
    const firstDelivery = realTries.find((event) => event.version === 1)!;
    // The first delivery's many older tries (as if its endpoint had failed for an hour).
    await sql`
      insert into webhook_delivery_attempts
             (delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at)
      select ${firstDelivery.deliveryId}::uuid, n,
             'failed', 503, 10, 'the endpoint answered HTTP 503',
             now() - interval '2 hours' + n * interval '1 second'
        from generate_series(1, 250) n
    `.execute(platform.orderingDb);

    const { events, eventsOmitted } = await timeline(orderId);
    const statuses = events.filter((event) => event.kind === 'status');
    expect(statuses.map((event) => event.version)).toEqual([
      1,
      2,
      ...Array.from({ length: 98 }, (_, index) => index + 5),
    ]);
    const tries = events.filter(isTry);
    expect(tries).toHaveLength(200);
    // The most recent: every real try, and the latest of the old ones.
    expect(tries.slice(-realTries.length)).toEqual(realTries);
    expect(eventsOmitted).toBe(2 + realTries.length + 250 - 200);
    // The events an order has once are never left out.
    expect(steps(events).slice(0, 6)).toEqual([
      'placed',
      'payment authorized 23.64 USD',
      'payment captured 23.64 USD',
      'v1 - → pending',
      'store accepted',
      'v2 pending → confirmed',
    ]);
  }, 120_000);

  it('serves the console: the list and the timeline read by the session cookie', async () => {
    const orderId = await place();
    const signIn = await call(platform.baseUrl, 'POST', '/v1/sessions', {
      body: { apiKey: market.apiKey },
    });
    expect(signIn.status, signIn.text).toBe(201);
    const token = new RegExp(`^${sessionCookieName}=([^;]+)`).exec(
      signIn.headers.getSetCookie()[0] ?? '',
    )?.[1];
    const byCookie = (path: string) =>
      call(platform.baseUrl, 'GET', path, {
        headers: { cookie: `${sessionCookieName}=${token}` },
      });
    for (const path of [
      '/v1/marketfront/orders?limit=100',
      `/v1/marketfront/orders/${orderId}/timeline`,
    ]) {
      const [cookie, bearer] = await Promise.all([byCookie(path), get(path, market.apiKey)]);
      expect(cookie.status, cookie.text).toBe(200);
      expect(cookie.body).toEqual(bearer.body);
    }
  });

  it("answers another partner's order, an unknown one and a malformed id like getOrder", async () => {
    const orderId = await place();
    const path = (id: string) => `/v1/marketfront/orders/${id}/timeline`;
    expectProblem(await get(path(orderId), otherMarket.apiKey), 404, 'ORDER_NOT_FOUND');
    expectProblem(await get(path(randomUUID()), market.apiKey), 404, 'ORDER_NOT_FOUND');
    expectProblem(await get(path('not-an-order'), market.apiKey), 400, 'REQUEST_INVALID');
    expectProblem(await get(path(orderId), commerce.apiKey), 403, 'FORBIDDEN');
    expectProblem(
      await get(`${path(orderId)}?${'x'.repeat(4_000)}=1`, market.apiKey),
      400,
      'REQUEST_INVALID',
    );
  });
});
