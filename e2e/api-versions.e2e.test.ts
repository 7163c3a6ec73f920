import {
  API_VERSION_CHANGES,
  API_VERSIONS,
  LATEST_API_VERSION,
  parseContract,
  problemDetail,
  type ApiVersionChange,
} from '@pcp/contracts';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { newStoreId, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type HttpResult } from './http.js';
import { answerChecker } from './openapi-answers.js';
import { seedPlacedOrder } from './seed-order.js';

// Dated API versions at the edge (docs/guide/versioning.md): each change module of 2026-12-01
// seen through the whole platform, a request and its answer in both versions.

const OLD = '2026-11-01';
const NEW = '2026-12-01';

let env: TestEnvironment;
let platform: TestPlatform;
type Partner = Awaited<ReturnType<TestPlatform['newPartner']>>;
let commerce: Partner;
let distribution: Partner;
let storeId: string;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
  storeId = newStoreId();
  const created = await as(commerce, 'PUT', `/v1/commerce/stores/${storeId}`, NEW, {
    body: storeProfile(),
  });
  expect(created.status, created.text).toBe(201);
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

/** A request of `partner` in `version` (no PCP-Version header when undefined). */
const as = (
  partner: { apiKey: string } | undefined,
  method: string,
  path: string,
  version: string | undefined,
  options: { body?: unknown; headers?: Record<string, string> } = {},
) =>
  call(platform.baseUrl, method, path, {
    ...(partner ? { apiKey: partner.apiKey } : {}),
    ...(options.body === undefined ? {} : { body: options.body }),
    headers: { ...(version === undefined ? {} : { 'pcp-version': version }), ...options.headers },
  });

function expectProblem(answer: HttpResult, status: number, errorCode: string) {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(parseContract(problemDetail, answer.body).success).toBe(true);
  expect(answer.body.errorCode).toBe(errorCode);
}

/** A ProblemDetail without what differs from one answer to the next. */
const comparable = (answer: HttpResult) => {
  const { requestId: _id, timestamp: _at, ...rest } = answer.body;
  return { status: answer.status, body: rest };
};

describe('the version of a request', () => {
  it('is the newest without a header or a pin, and every answer says it', async () => {
    const docs = await as(undefined, 'GET', '/openapi.json', undefined);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('pcp-version')).toBe(LATEST_API_VERSION);
    const read = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, undefined);
    expect(read.headers.get('pcp-version')).toBe(LATEST_API_VERSION);
    const unknown = await as(commerce, 'GET', '/v1/commerce/nothing-here', undefined);
    expectProblem(unknown, 404, 'NOT_FOUND');
    expect(unknown.headers.get('pcp-version')).toBe(LATEST_API_VERSION);
  });

  it('is the header’s when it names one, on errors and refusals too', async () => {
    for (const version of API_VERSIONS) {
      const read = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, version);
      expect(read.status).toBe(200);
      expect(read.headers.get('pcp-version')).toBe(version);
      const unauthenticated = await as(undefined, 'GET', '/v1/commerce/stores', version);
      expectProblem(unauthenticated, 401, 'UNAUTHORIZED');
      expect(unauthenticated.headers.get('pcp-version')).toBe(version);
      const missing = await as(commerce, 'GET', `/v1/commerce/stores/${newStoreId()}`, version);
      expectProblem(missing, 404, 'STORE_NOT_FOUND');
      expect(missing.headers.get('pcp-version')).toBe(version);
    }
  });

  it.each([
    ['an unknown date', '2026-11-02'],
    ['a date-time', '2026-11-01T00:00:00Z'],
    ['empty', ''],
    ['two values', `${OLD}, ${NEW}`],
    ['oversized', '2026-11-01'.repeat(1_000)],
    ['a version in other case', 'LATEST'],
  ])('refuses %s with 400 API_VERSION_INVALID, never echoing it', async (_case, value) => {
    const answer = await as(distribution, 'GET', '/v1/marketfront/webhooks', undefined, {
      headers: { 'pcp-version': value },
    });
    expectProblem(answer, 400, 'API_VERSION_INVALID');
    expect(answer.body.detail).toBe(
      `PCP-Version must be one of the API versions: ${API_VERSIONS.join(', ')}`,
    );
    expect(answer.headers.get('pcp-version')).toBe(LATEST_API_VERSION);
    if (value.length > 100) expect(answer.text).not.toContain(value);
  });

  it('refuses a header sent twice', async () => {
    const headers = new Headers({ authorization: `Bearer ${distribution.apiKey}` });
    headers.append('pcp-version', OLD);
    headers.append('pcp-version', OLD);
    const response = await fetch(`${platform.baseUrl}/v1/marketfront/webhooks`, { headers });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errorCode: string }).errorCode).toBe(
      'API_VERSION_INVALID',
    );
  });

  it('reads the header’s name in any case', async () => {
    for (const name of ['PCP-VERSION', 'pcp-version', 'Pcp-Version']) {
      const raw = await rawRequest(
        `GET /v1/commerce/stores/${storeId} HTTP/1.1\r\nHost: x\r\n` +
          `Authorization: Bearer ${commerce.apiKey}\r\n${name}: ${OLD}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw).toMatch(/^HTTP\/1\.1 200 /);
      expect(raw.toLowerCase()).toContain(`pcp-version: ${OLD}`);
    }
  });

  it('refuses control characters in the header as malformed HTTP, with a version said', async () => {
    const raw = await rawRequest(
      `GET /v1/commerce/stores HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${commerce.apiKey}\r\nPCP-Version: 2026-11\u000001\r\nConnection: close\r\n\r\n`,
    );
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toContain(`PCP-Version: ${LATEST_API_VERSION}`);
    expect(raw).toContain('"errorCode":"REQUEST_INVALID"');
  });

  it('of a live event stream is the newest, the one its events are written in', async () => {
    const aborted = new AbortController();
    const response = await fetch(`${platform.baseUrl}/v1/marketfront/events`, {
      headers: { authorization: `Bearer ${distribution.apiKey}`, 'pcp-version': OLD },
      signal: aborted.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('pcp-version')).toBe(LATEST_API_VERSION);
    aborted.abort();
  });

  it('is kept in the request log', async () => {
    const marker = `versioned-${Date.now()}`;
    await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, OLD, {
      headers: { 'x-request-id': marker },
    });
    let entry: { apiVersion?: string } | undefined;
    for (let attempt = 0; attempt < 50 && !entry; attempt++) {
      const log = await as(commerce, 'GET', '/v1/commerce/requests?limit=100', NEW);
      entry = log.body.requests.find(
        (request: { clientRequestId?: string }) => request.clientRequestId === marker,
      );
      if (!entry) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(entry?.apiVersion).toBe(OLD);
  });
});

describe('the newest version', () => {
  it('calls no transform: its answers go out as the services wrote them', async () => {
    // Every transform of the registry, counted while this test runs (the gateway calls the
    // same functions: the registry is read at each call).
    let calls = 0;
    const restore: (() => void)[] = [];
    const count = <T extends (...args: never[]) => unknown>(transform: T): T =>
      ((...args: Parameters<T>) => {
        calls++;
        return transform(...args);
      }) as T;
    for (const change of Object.values(API_VERSION_CHANGES).flat()) {
      const mutable = change as { -readonly [K in keyof ApiVersionChange]: ApiVersionChange[K] };
      for (const field of ['responseDown', 'requestUp'] as const) {
        const original = mutable[field];
        if (!original) continue;
        mutable[field] = Object.fromEntries(
          Object.entries(original).map(([operationId, transform]) => [
            operationId,
            typeof transform === 'function'
              ? count(transform)
              : { ...transform, ...(transform.up ? { up: count(transform.up) } : {}) },
          ]),
        );
        restore.push(() => (mutable[field] = original as never));
      }
    }
    try {
      const store = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, NEW);
      expect(store.status).toBe(200);
      await as(commerce, 'GET', '/v1/commerce/stores', undefined);
      const denial = await as(commerce, 'POST', `/v1/commerce/orders/${newStoreId()}/status`, NEW, {
        body: { state: 'cancelled', cancelReason: 'x', unavailableItemIds: [newStoreId()] },
      });
      expect(denial.status).toBe(404);
      expect(calls).toBe(0);
      // The counting reaches the gateway: an older version's request calls them.
      await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, OLD);
      expect(calls).toBeGreaterThan(0);
    } finally {
      for (const undo of restore) undo();
    }
  });
});

describe('the translation of a forwarded body', () => {
  it('parses, brings up and forwards again a body the gateway passes on as bytes', async () => {
    // No change of 2026-12-01 rewrites a forwarded body yet: one made up for this test shows
    // the path works for the next (discovery forwards its body to the stores service unparsed).
    const change = API_VERSION_CHANGES['2026-12-01'][0] as {
      requestUp?: ApiVersionChange['requestUp'];
    };
    const original = change.requestUp;
    change.requestUp = {
      ...original,
      discoverStores: { up: (body) => ({ ...(body as object), fulfillmentType: 'PICKUP' }) },
    };
    try {
      const body = { location: { latitude: 41.8789, longitude: -87.6359 } };
      const older = await as(distribution, 'POST', '/v1/marketfront/stores/discover', OLD, {
        body,
      });
      expect(older.status, older.text).toBe(200);
      expect(older.body.stores.length).toBeGreaterThan(0);
      const newer = await as(distribution, 'POST', '/v1/marketfront/stores/discover', NEW, {
        body,
      });
      expectProblem(newer, 400, 'REQUEST_INVALID');
      // A body that is not JSON is left for the service to refuse, as in any version.
      const broken = await call(platform.baseUrl, 'POST', '/v1/marketfront/stores/discover', {
        apiKey: distribution.apiKey,
        rawBody: '{"location":',
        headers: { 'pcp-version': OLD },
      });
      expectProblem(broken, 400, 'REQUEST_INVALID');
    } finally {
      change.requestUp = original;
    }
  });
});

describe('the translation of a ProblemDetail', () => {
  it('brings every ProblemDetail of an older version down, an unknown route’s too', async () => {
    // As above, a change made up for the test: none of 2026-12-01 rewrites a ProblemDetail.
    const change = API_VERSION_CHANGES['2026-12-01'][0] as {
      problemDown?: ApiVersionChange['problemDown'];
    };
    const seen: (string | undefined)[] = [];
    change.problemDown = (problem, operationId) => {
      seen.push(operationId);
      return { ...problem, detail: `older: ${problem.detail}` };
    };
    try {
      const missing = await as(commerce, 'GET', `/v1/commerce/stores/${newStoreId()}`, OLD);
      expectProblem(missing, 404, 'STORE_NOT_FOUND');
      expect(missing.body.detail).toMatch(/^older: /);
      const unknown = await as(commerce, 'GET', '/v1/commerce/nothing-here', OLD);
      expect(unknown.body.detail).toBe('older: No route GET /v1/commerce/nothing-here');
      const newer = await as(commerce, 'GET', `/v1/commerce/stores/${newStoreId()}`, NEW);
      expect(newer.body.detail).not.toMatch(/^older: /);
      expect(seen).toEqual(['getStore', undefined]);
    } finally {
      delete change.problemDown;
    }
  });
});

describe('2026-12-01 store-busy-status', () => {
  it('reads a busy store as online without extraPrepMinutes under 2026-11-01', async () => {
    const busy = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, NEW, {
      body: { status: 'busy', extraPrepMinutes: 20 },
    });
    expect(busy.status, busy.text).toBe(200);
    expect(busy.body).toMatchObject({ status: 'busy', extraPrepMinutes: 20 });

    const newer = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, NEW);
    expect(newer.body).toMatchObject({ status: 'busy', extraPrepMinutes: 20 });
    const older = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}`, OLD);
    expect(older.status).toBe(200);
    const { extraPrepMinutes: _minutes, ...rest } = newer.body;
    expect(older.body).toEqual({ ...rest, status: 'online' });

    const listed = await as(commerce, 'GET', '/v1/commerce/stores', OLD);
    const mine = listed.body.stores.find((store: { storeId: string }) => store.storeId === storeId);
    expect(mine.status).toBe('online');
    expect(mine).not.toHaveProperty('extraPrepMinutes');

    const statusNew = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}/status`, NEW);
    expect(statusNew.body).toMatchObject({ status: 'busy', extraPrepMinutes: 20 });
    const statusOld = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}/status`, OLD);
    expect(statusOld.body).toEqual({
      status: 'online',
      reason: null,
      pausedAt: null,
      resumeAt: null,
      pausedBy: statusNew.body.pausedBy,
    });

    const near = {
      location: { latitude: 41.8789, longitude: -87.6359 },
      fulfillmentType: 'PICKUP',
    };
    const discoveredNew = await as(distribution, 'POST', '/v1/marketfront/stores/discover', NEW, {
      body: near,
    });
    expect(discoveredNew.status, discoveredNew.text).toBe(200);
    const foundNew = discoveredNew.body.stores.find(
      (store: { storeId: string }) => store.storeId === storeId,
    );
    expect(foundNew).toMatchObject({ status: 'busy', extraPrepMinutes: 20 });
    const discoveredOld = await as(distribution, 'POST', '/v1/marketfront/stores/discover', OLD, {
      body: near,
    });
    const { extraPrepMinutes: _extra, ...foundRest } = foundNew;
    expect(
      discoveredOld.body.stores.find((store: { storeId: string }) => store.storeId === storeId),
    ).toEqual({ ...foundRest, status: 'online' });

    const lookedUp = await as(distribution, 'GET', `/v1/marketfront/stores/${storeId}`, OLD);
    expect(lookedUp.status, lookedUp.text).toBe(200);
    expect(lookedUp.body.status).toBe('online');
    expect(lookedUp.body).not.toHaveProperty('extraPrepMinutes');
  });

  it('refuses to set busy under 2026-11-01 as an unknown status, and sets the others', async () => {
    const busy = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, OLD, {
      body: { status: 'busy', extraPrepMinutes: 20 },
    });
    expectProblem(busy, 400, 'REQUEST_INVALID');
    const unknown = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, OLD, {
      body: { status: 'sleepy' },
    });
    expect(comparable(busy)).toEqual(comparable(unknown));

    const paused = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, OLD, {
      body: { status: 'paused', reason: 'maintenance' },
    });
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', reason: 'maintenance' });
    expect(paused.body).not.toHaveProperty('extraPrepMinutes');
    const online = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, OLD, {
      body: { status: 'online' },
    });
    expect(online.body.status).toBe('online');
  });
});

describe('2026-12-01 order-accept-by', () => {
  it('answers orders without acceptBy under 2026-11-01', async () => {
    const acceptBy = new Date(Date.now() + 600_000);
    const orderId = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer: distribution,
      acceptBy,
    });
    const newer = await as(distribution, 'GET', `/v1/marketfront/orders/${orderId}`, NEW, {
      headers: { 'x-end-user-id': 'diner-1' },
    });
    expect(newer.status, newer.text).toBe(200);
    expect(newer.body.acceptBy).toBe(acceptBy.toISOString());
    const older = await as(distribution, 'GET', `/v1/marketfront/orders/${orderId}`, OLD, {
      headers: { 'x-end-user-id': 'diner-1' },
    });
    const { acceptBy: _acceptBy, ...rest } = newer.body;
    expect(older.body).toEqual(rest);

    const listed = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}/orders`, OLD);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.orders.length).toBeGreaterThan(0);
    for (const order of listed.body.orders) expect(order).not.toHaveProperty('acceptBy');
    const listedNew = await as(commerce, 'GET', `/v1/commerce/stores/${storeId}/orders`, NEW);
    for (const order of listedNew.body.orders) expect(order).toHaveProperty('acceptBy');
  });
});

describe('2026-12-01 item-availability', () => {
  it('answers its operations 404 under 2026-11-01, as an unknown route', async () => {
    const path = `/v1/commerce/stores/${storeId}/item-availability`;
    const older = await as(commerce, 'GET', path, OLD);
    expectProblem(older, 404, 'NOT_FOUND');
    const unknown = await as(commerce, 'GET', `${path}-nowhere`, OLD);
    expect(older.body.detail).toBe(`No route GET ${path}`);
    expect(unknown.body.detail).toBe(`No route GET ${path}-nowhere`);
    expect(older.headers.get('pcp-version')).toBe(OLD);
    const newer = await as(commerce, 'GET', path, NEW);
    expect(newer.status, newer.text).toBe(200);
    expect(newer.body).toMatchObject({ items: [] });
    const lookUp = await as(
      distribution,
      'GET',
      `/v1/marketfront/stores/${storeId}/item-availability`,
      OLD,
    );
    expectProblem(lookUp, 404, 'NOT_FOUND');
  });

  it('ignores unavailableItemIds on a denial under 2026-11-01, as that version did', async () => {
    const orderId = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer: distribution,
    });
    const denied = await as(commerce, 'POST', `/v1/commerce/orders/${orderId}/status`, OLD, {
      body: {
        state: 'cancelled',
        cancelReason: 'out of soda',
        unavailableItemIds: ['not even an id'],
      },
    });
    expect(denied.status, denied.text).toBe(200);
    expect(denied.body).toMatchObject({ state: 'cancelled' });
    expect(denied.body).not.toHaveProperty('acceptBy');
    // The newest version reads the field, and refuses this one.
    const other = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer: distribution,
    });
    const refused = await as(commerce, 'POST', `/v1/commerce/orders/${other}/status`, NEW, {
      body: { state: 'cancelled', cancelReason: 'out of soda', unavailableItemIds: ['x'] },
    });
    expectProblem(refused, 400, 'REQUEST_INVALID');
    const overrides = await as(
      commerce,
      'GET',
      `/v1/commerce/stores/${storeId}/item-availability`,
      NEW,
    );
    expect(overrides.body.items).toEqual([]);
  });
});

describe('2026-12-01 special-hours', () => {
  it('answers its operations 404 under 2026-11-01', async () => {
    const path = `/v1/commerce/stores/${storeId}/special-hours`;
    const body = { days: [{ date: '2026-12-25', closed: true }] };
    expectProblem(await as(commerce, 'PUT', path, OLD, { body }), 404, 'NOT_FOUND');
    expectProblem(await as(commerce, 'GET', path, OLD), 404, 'NOT_FOUND');
    const set = await as(commerce, 'PUT', path, NEW, { body });
    expect(set.status, set.text).toBe(200);
    expect((await as(commerce, 'GET', path, NEW)).status).toBe(200);
  });
});

describe('2026-12-01 store-events', () => {
  const url = 'https://partner.example/webhooks';

  it('refuses a store event kind under 2026-11-01 as the older enum did', async () => {
    const partner = await platform.newPartner('distribution');
    const store = await as(partner, 'PUT', '/v1/marketfront/webhooks', OLD, {
      body: { url, events: ['order.created', 'store.status_changed'] },
    });
    expectProblem(store, 400, 'REQUEST_INVALID');
    expect(store.body.errors[0].pointer).toBe('/events/1');
    expect(store.body.errors[0].message).not.toContain('store.');
    // Today, an unknown kind is refused at the same place.
    const unknown = await as(partner, 'PUT', '/v1/marketfront/webhooks', NEW, {
      body: { url, events: ['order.created', 'order.eaten'] },
    });
    expectProblem(unknown, 400, 'REQUEST_INVALID');
    expect(unknown.body.errors[0].pointer).toBe('/events/1');

    const older = await as(partner, 'PUT', '/v1/marketfront/webhooks', OLD, {
      body: { url, events: ['order.created'] },
    });
    expect(older.status, older.text).toBe(201);
    expect(older.body.events).toEqual(['order.created']);
  });

  it('shows only order event kinds under 2026-11-01', async () => {
    const partner = await platform.newPartner('distribution');
    const events = ['order.created', 'store.status_changed', 'catalog.activated'];
    const newer = await as(partner, 'PUT', '/v1/marketfront/webhooks', NEW, {
      body: { url, events },
    });
    expect(newer.status, newer.text).toBe(201);
    expect(newer.body.events).toEqual(events);
    const older = await as(partner, 'GET', '/v1/marketfront/webhooks', OLD);
    expect(older.body.events).toEqual(['order.created']);
    expect((await as(partner, 'GET', '/v1/marketfront/webhooks', NEW)).body.events).toEqual(events);
  });
});

describe('2026-12-01 sandbox', () => {
  it('answers the test helpers 404 under 2026-11-01', async () => {
    const tester = await platform.newPartner('distribution', { mode: 'test' });
    expectProblem(await as(tester, 'POST', '/v1/test/reset', OLD), 404, 'NOT_FOUND');
    const reset = await as(tester, 'POST', '/v1/test/reset', NEW);
    expect(reset.status, reset.text).toBe(200);
  });
});

describe('answers against their version’s OpenAPI document', () => {
  type Check = ReturnType<typeof answerChecker>;
  const checkerOf = async (version: string): Promise<Check> => {
    const response = await fetch(`${platform.baseUrl}/openapi.json?version=${version}`);
    expect(response.status).toBe(200);
    return answerChecker((await response.json()) as Parameters<typeof answerChecker>[0]);
  };

  it('of 2026-11-01 match its document, with today’s answers having what it lacks', async () => {
    const [older, newer] = [await checkerOf(OLD), await checkerOf(NEW)];
    // What 2026-12-01 added, all at once: a busy store, an order with acceptBy, an endpoint
    // subscribed to store events.
    const busy = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, NEW, {
      body: { status: 'busy', extraPrepMinutes: 15 },
    });
    expect(busy.status, busy.text).toBe(200);
    const orderId = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer: distribution,
      acceptBy: new Date(Date.now() + 600_000),
    });
    const subscriber = await platform.newPartner('distribution');
    const endpoint = await as(subscriber, 'PUT', '/v1/marketfront/webhooks', NEW, {
      body: {
        url: 'https://partner.example/hooks',
        events: ['order.created', 'store.status_changed'],
      },
    });
    expect(endpoint.status, endpoint.text).toBe(201);

    const diner = { 'x-end-user-id': 'diner-1' };
    const near = {
      location: { latitude: 41.8789, longitude: -87.6359 },
      fulfillmentType: 'PICKUP',
    };
    const reads: [
      Partner,
      string,
      string,
      string,
      { body?: unknown; headers?: Record<string, string> }?,
    ][] = [
      [commerce, 'getStore', 'GET', `/v1/commerce/stores/${storeId}`],
      [commerce, 'listStores', 'GET', '/v1/commerce/stores'],
      [commerce, 'getStoreStatus', 'GET', `/v1/commerce/stores/${storeId}/status`],
      [distribution, 'lookUpStore', 'GET', `/v1/marketfront/stores/${storeId}`],
      [distribution, 'discoverStores', 'POST', '/v1/marketfront/stores/discover', { body: near }],
      [distribution, 'getOrder', 'GET', `/v1/marketfront/orders/${orderId}`, { headers: diner }],
      [commerce, 'listStoreOrders', 'GET', `/v1/commerce/stores/${storeId}/orders`],
      [subscriber, 'getWebhook', 'GET', '/v1/marketfront/webhooks'],
      [subscriber, 'listWebhookDeliveries', 'GET', '/v1/marketfront/webhooks/deliveries'],
    ];
    for (const [partner, operationId, method, path, options] of reads) {
      const inOlder = await as(partner, method, path, OLD, options);
      expect(inOlder.status, `${operationId} ${inOlder.text}`).toBe(200);
      expect(older(operationId, 200, inOlder.body)).toEqual([]);
      const inNewer = await as(partner, method, path, NEW, options);
      expect(newer(operationId, 200, inNewer.body)).toEqual([]);
      if (operationId === 'listWebhookDeliveries') continue; // empty: nothing newer to show
      // The check can fail: today's answer has what 2026-11-01's document lacks.
      expect(older(operationId, 200, inNewer.body), operationId).not.toEqual([]);
    }

    const online = await as(commerce, 'POST', `/v1/commerce/stores/${storeId}/status`, OLD, {
      body: { status: 'online' },
    });
    expect(online.status, online.text).toBe(200);
    expect(older('setStoreStatus', 200, online.body)).toEqual([]);
  });
});

/** Send `request` as written and read the whole answer (headers a fetch would refuse). */
function rawRequest(request: string): Promise<string> {
  const { hostname, port } = new URL(platform.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
  });
}
