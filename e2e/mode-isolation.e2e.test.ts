// Live and test data never meet (docs/guide/sandbox.md#modes): for every operation of the
// OpenAPI document, data made in one mode is read, changed or referenced (its ids in paths,
// bodies and queries) with a key of the same partner in the other mode, and is never visible:
// the usual …_NOT_FOUND, an empty or foreign list, an unchanged resource. The first test fails
// when an operation is added to the document without a case here.
import { createPlatformClient, ingestCatalog } from '@pcp/client';
import { buildOpenApiDocument } from '@pcp/gateway';
import { createKey, keyIdOf, setRateLimits } from '@pcp/gateway/admin';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { sodaOrder } from './orders.js';
import { openSse, type OpenStream } from './sse.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

type Mode = 'live' | 'test';

/** What one mode's keys made: a store with a catalog, an order, a card, an address, a delivery. */
interface World {
  readonly mode: Mode;
  readonly commerceKey: string;
  readonly marketKey: string;
  readonly storeId: string;
  readonly ids: ReturnType<typeof cartTestCatalog>['ids'];
  readonly catalogDocument: unknown;
  readonly catalogIngestId: string;
  readonly orderId: string;
  readonly paymentId: string;
  readonly addressId: string;
  readonly deliveryId: string;
  readonly webhookUrl: string;
}

/**
 * One operation's case: `data` is the world whose ids are used, `caller` the world of the
 * same partners in the other mode, whose keys make the calls.
 */
type Case = (data: World, caller: World) => Promise<void>;

const TEST_CARD = {
  cardNumber: '4242424242424242',
  expMonth: 12,
  expYear: 2035,
  cvc: '123',
  cardholderName: 'Pat Doe',
};
const methods = ['get', 'put', 'post', 'delete', 'patch'] as const;
/** The same end user in both modes: its cards and addresses must still not mix. */
const endUser = `buyer-${randomUUID()}`;
const asEndUser = { 'X-End-User-Id': endUser };

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
const receivers: WebhookReceiver[] = [];
const worlds = {} as Record<Mode, World>;

const send = (
  method: string,
  path: string,
  apiKey: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
) => call(platform.baseUrl, method, path, { apiKey, ...options });

function expectProblem(result: HttpResult, status: number, codes: readonly string[]) {
  expect(result.status, result.text).toBe(status);
  expect(codes, result.text).toContain(result.body?.errorCode);
}

const expectNotFound = (result: HttpResult, ...codes: string[]) =>
  expectProblem(result, 404, codes);

/** A test-only operation: a live key is refused outright; a test key gets `onTest`'s checks. */
async function testOnly(
  caller: World,
  call: () => Promise<HttpResult>,
  onTest: () => Promise<void>,
) {
  if (caller.mode === 'live') expectProblem(await call(), 403, ['FORBIDDEN']);
  else await onTest();
}

const ids = <T>(list: T[], key: keyof T) => list.map((entry) => entry[key]);

/** A console session of `apiKey` (docs/guide/authentication.md#console-sessions). */
async function signIn(apiKey: string) {
  const response = await call(platform.baseUrl, 'POST', '/v1/sessions', { body: { apiKey } });
  expect(response.status, response.text).toBe(201);
  const cookie = response.headers.getSetCookie()[0]?.split(';')[0] ?? '';
  return {
    body: response.body as { partnerId: string; mode: Mode; csrfToken: string },
    /** A request by the session's cookie, with its CSRF token. */
    send: (method: string, path: string) =>
      call(platform.baseUrl, method, path, {
        headers: { cookie, 'x-csrf-token': response.body.csrfToken as string },
      }),
  };
}

async function webhookEndpoint(world: World) {
  const read = await send('GET', '/v1/marketfront/webhooks', world.marketKey);
  expect(read.status, read.text).toBe(200);
  return read.body as { url: string; previousSecretExpiresAt: string | null };
}

const cardsOf = async (world: World) =>
  ids(
    (await send('GET', '/v1/marketfront/payments/cards', world.marketKey, { headers: asEndUser }))
      .body.cards as { paymentId: string }[],
    'paymentId',
  );

const addressesOf = async (world: World) =>
  ids(
    (await send('GET', '/v1/marketfront/addresses', world.marketKey, { headers: asEndUser })).body
      .addresses as { addressId: string }[],
    'addressId',
  );

const cartLine = (world: World) => ({
  itemId: world.ids.soda,
  lineItemId: randomUUID(),
  quantity: 1,
});

/** A cart of the `data` world's store and catalog. */
const cartOf = (world: World) => ({
  catalogSetId: world.ids.catalogSetId,
  storeId: world.storeId,
  lineItems: [cartLine(world)],
});

const orderBody = (store: World, payment: World) =>
  sodaOrder(store.ids, store.storeId, payment.paymentId);

type Area = 'commerce' | 'marketfront';
const areaKey = (world: World, area: Area) =>
  area === 'commerce' ? world.commerceKey : world.marketKey;

/** A failed request (404 NOT_FOUND) of the world's key, once its own log shows it. */
async function loggedFailure(area: Area, world: World): Promise<string> {
  const requestId = randomUUID();
  const failed = await send('GET', `/v1/${area}/no-such-route`, areaKey(world, area), {
    headers: { 'X-Request-Id': requestId },
  });
  expectNotFound(failed, 'NOT_FOUND');
  const deadline = Date.now() + 10_000;
  while ((await requestIdsOf(area, world, '&status=404')).includes(requestId) === false) {
    expect(Date.now(), 'the request is logged within a flush').toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return requestId;
}

async function requestIdsOf(area: Area, world: World, query = '') {
  const log = await send('GET', `/v1/${area}/requests?limit=100${query}`, areaKey(world, area));
  expect(log.status, log.text).toBe(200);
  return ids(log.body.requests as { requestId: string }[], 'requestId');
}

async function readsUsed(area: Area, world: World): Promise<number> {
  const usage = await send('GET', `/v1/${area}/rate-limits`, areaKey(world, area));
  expect(usage.status, usage.text).toBe(200);
  return (usage.body.limits as { bucket: string; used: number }[]).find(
    (limit) => limit.bucket === 'reads',
  )!.used;
}

/** The cases of the request log, keys and rate-limit usage of one area (docs/guide/requests.md). */
const accountCases = (area: Area): Record<string, Case> => ({
  [`GET /v1/${area}/requests`]: async (data, caller) => {
    const theirs = await loggedFailure(area, data);
    const mine = await loggedFailure(area, caller);
    const seen = await requestIdsOf(area, caller);
    expect(seen).toContain(mine);
    expect(seen).not.toContain(theirs);
  },
  [`GET /v1/${area}/requests/errors`]: async (data, caller) => {
    const theirs = await loggedFailure(area, data);
    const errors = await send('GET', `/v1/${area}/requests/errors`, areaKey(caller, area));
    expect(errors.status, errors.text).toBe(200);
    expect(ids(errors.body.groups as { lastRequestId: string }[], 'lastRequestId')).not.toContain(
      theirs,
    );
  },
  [`GET /v1/${area}/keys`]: async (data, caller) => {
    const listed = await send('GET', `/v1/${area}/keys`, areaKey(caller, area));
    expect(listed.status, listed.text).toBe(200);
    const keys = listed.body.keys as { keyId: string; mode: string }[];
    expect(ids(keys, 'keyId')).toContain(keyIdOf(areaKey(caller, area)));
    expect(ids(keys, 'keyId')).not.toContain(keyIdOf(areaKey(data, area)));
    expect(new Set(ids(keys, 'mode'))).toEqual(new Set([caller.mode]));
  },
  [`GET /v1/${area}/rate-limits`]: async (data, caller) => {
    const before = await readsUsed(area, caller);
    for (let i = 0; i < 5; i++) await readsUsed(area, data);
    // Only this read is the caller's (fewer if its window ended meanwhile).
    expect(await readsUsed(area, caller)).toBeLessThanOrEqual(before + 1);
  },
  // The API version pin is the partner's, shared by its modes by design
  // (docs/guide/requests.md#api-version): both read the same one.
  [`GET /v1/${area}/api-version`]: async (data, caller) => {
    const [theirs, mine] = await Promise.all(
      [data, caller].map((world) => send('GET', `/v1/${area}/api-version`, areaKey(world, area))),
    );
    expect(mine!.status, mine!.text).toBe(200);
    expect(mine!.body).toEqual(theirs!.body);
  },
  // Only a live key moves it: a test key cannot change what the live integration runs.
  [`POST /v1/${area}/api-version`]: async (data, caller) => {
    const pin = await send('GET', `/v1/${area}/api-version`, areaKey(data, area));
    const version = pin.body.apiVersion as string;
    const moved = await send('POST', `/v1/${area}/api-version`, areaKey(caller, area), {
      body: { version },
    });
    if (caller.mode === 'test') expectProblem(moved, 403, ['FORBIDDEN']);
    else expect(moved.body).toEqual({ version, previousVersion: version });
  },
});

/**
 * One case per operation of the document, `METHOD /path` as the document writes it. The
 * reset is last: with a test key it deletes the test world, so nothing may run after it.
 */
const cases: Record<string, Case> = {
  'PUT /v1/commerce/stores/{storeId}': async (data, caller) => {
    // Store ids are one namespace: the other mode's store is another tenant's.
    const put = await send('PUT', `/v1/commerce/stores/${data.storeId}`, caller.commerceKey, {
      body: storeProfile({ name: 'Taken over', orderSubmissionUrl: undefined }),
    });
    expectNotFound(put, 'STORE_NOT_FOUND');
    const read = await send('GET', `/v1/commerce/stores/${data.storeId}`, data.commerceKey);
    expect(read.body.name).not.toBe('Taken over');
  },
  'GET /v1/commerce/stores/{storeId}': async (data, caller) =>
    expectNotFound(
      await send('GET', `/v1/commerce/stores/${data.storeId}`, caller.commerceKey),
      'STORE_NOT_FOUND',
    ),
  'POST /v1/commerce/stores/{storeId}/order-submission/rotate-secret': async (data, caller) =>
    expectNotFound(
      await send(
        'POST',
        `/v1/commerce/stores/${data.storeId}/order-submission/rotate-secret`,
        caller.commerceKey,
      ),
      'STORE_NOT_FOUND',
    ),
  'GET /v1/commerce/stores': async (data, caller) => {
    const list = await send('GET', '/v1/commerce/stores?limit=100', caller.commerceKey);
    expect(list.status, list.text).toBe(200);
    const storeIds = ids(list.body.stores as { storeId: string }[], 'storeId');
    expect(storeIds).toContain(caller.storeId);
    expect(storeIds).not.toContain(data.storeId);
  },
  'GET /v1/commerce/stores/{storeId}/status': async (data, caller) =>
    expectNotFound(
      await send('GET', `/v1/commerce/stores/${data.storeId}/status`, caller.commerceKey),
      'STORE_NOT_FOUND',
    ),
  'POST /v1/commerce/stores/{storeId}/status': async (data, caller) =>
    expectNotFound(
      await send('POST', `/v1/commerce/stores/${data.storeId}/status`, caller.commerceKey, {
        body: { status: 'paused', reason: 'too_busy' },
      }),
      'STORE_NOT_FOUND',
    ),
  'GET /v1/commerce/stores/{storeId}/special-hours': async (data, caller) =>
    expectNotFound(
      await send('GET', `/v1/commerce/stores/${data.storeId}/special-hours`, caller.commerceKey),
      'STORE_NOT_FOUND',
    ),
  'PUT /v1/commerce/stores/{storeId}/special-hours': async (data, caller) => {
    const date = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    expectNotFound(
      await send('PUT', `/v1/commerce/stores/${data.storeId}/special-hours`, caller.commerceKey, {
        body: { days: [{ date, closed: true }] },
      }),
      'STORE_NOT_FOUND',
    );
  },
  'GET /v1/marketfront/stores/{storeId}': async (data, caller) =>
    expectNotFound(
      await send('GET', `/v1/marketfront/stores/${data.storeId}`, caller.marketKey),
      'STORE_NOT_FOUND',
    ),
  'PUT /v1/commerce/stores/{storeId}/item-availability': async (data, caller) =>
    expectNotFound(
      await send(
        'PUT',
        `/v1/commerce/stores/${data.storeId}/item-availability`,
        caller.commerceKey,
        { body: { items: [{ itemId: data.ids.soda, available: false }] } },
      ),
      'STORE_NOT_FOUND',
    ),
  'GET /v1/commerce/stores/{storeId}/item-availability': async (data, caller) =>
    expectNotFound(
      await send(
        'GET',
        `/v1/commerce/stores/${data.storeId}/item-availability`,
        caller.commerceKey,
      ),
      'STORE_NOT_FOUND',
    ),
  'GET /v1/marketfront/stores/{storeId}/item-availability': async (data, caller) =>
    expectNotFound(
      await send(
        'GET',
        `/v1/marketfront/stores/${data.storeId}/item-availability`,
        caller.marketKey,
      ),
      'STORE_NOT_FOUND',
    ),
  'POST /v1/commerce/catalogset-notification': async (data, caller) =>
    expectNotFound(
      await send(
        'POST',
        `/v1/commerce/catalogset-notification?storeId=${data.storeId}`,
        caller.commerceKey,
        { body: { callbackUrl: host.serveJson(`/${randomUUID()}.json`, data.catalogDocument) } },
      ),
      'STORE_NOT_FOUND',
    ),
  'GET /v1/commerce/stores/{storeId}/catalog-ingest/{catalogIngestId}/status': async (
    data,
    caller,
  ) => {
    const path = (storeId: string) =>
      `/v1/commerce/stores/${storeId}/catalog-ingest/${data.catalogIngestId}/status`;
    for (const storeId of [data.storeId, caller.storeId]) {
      expectNotFound(
        await send('GET', path(storeId), caller.commerceKey),
        'CATALOG_INGEST_NOT_FOUND',
        'STORE_NOT_FOUND',
      );
    }
  },
  'GET /v1/commerce/stores/{storeId}/catalog-ingests': async (data, caller) => {
    expectNotFound(
      await send('GET', `/v1/commerce/stores/${data.storeId}/catalog-ingests`, caller.commerceKey),
      'STORE_NOT_FOUND',
    );
    const own = await send(
      'GET',
      `/v1/commerce/stores/${caller.storeId}/catalog-ingests?limit=100`,
      caller.commerceKey,
    );
    expect(own.status, own.text).toBe(200);
    const runIds = ids(own.body.ingests as { catalogIngestId: string }[], 'catalogIngestId');
    expect(runIds).toContain(caller.catalogIngestId);
    expect(runIds).not.toContain(data.catalogIngestId);
  },
  'GET /v1/marketfront/stores/{storeId}/catalogset': async (data, caller) =>
    expectNotFound(
      await send('GET', `/v1/marketfront/stores/${data.storeId}/catalogset`, caller.marketKey),
      'STORE_NOT_FOUND',
      'CATALOGSET_NOT_FOUND',
    ),
  'POST /v1/commerce/stores/{storeId}/catalogset-validation': async (data, caller) =>
    expectNotFound(
      await send(
        'POST',
        `/v1/commerce/stores/${data.storeId}/catalogset-validation`,
        caller.commerceKey,
        { body: { callbackUrl: host.serveJson(`/${randomUUID()}.json`, data.catalogDocument) } },
      ),
      'STORE_NOT_FOUND',
    ),
  'POST /v1/marketfront/addresses': async (data, caller) => {
    const before = await addressesOf(data);
    const saved = await send('POST', '/v1/marketfront/addresses', caller.marketKey, {
      headers: asEndUser,
      body: { address1: '200 E Randolph St', city: 'Chicago', state: 'IL', postalCode: '60601' },
    });
    expect(saved.status, saved.text).toBeLessThan(300);
    expect(await addressesOf(data)).toEqual(before);
  },
  'GET /v1/marketfront/addresses': async (data, caller) => {
    const listed = await addressesOf(caller);
    expect(listed).toContain(caller.addressId);
    expect(listed).not.toContain(data.addressId);
  },
  'DELETE /v1/marketfront/addresses/{addressId}': async (data, caller) => {
    expectProblem(
      await send('DELETE', `/v1/marketfront/addresses/${data.addressId}`, caller.marketKey, {
        headers: asEndUser,
      }),
      422,
      ['ADDRESS_INVALID'],
    );
    expect(await addressesOf(data)).toContain(data.addressId);
  },
  'GET /v1/marketfront/orders/{orderId}': async (data, caller) =>
    expectNotFound(
      await send('GET', `/v1/marketfront/orders/${data.orderId}`, caller.marketKey),
      'ORDER_NOT_FOUND',
    ),
  'GET /v1/marketfront/orders': async (data, caller) => {
    const list = await send('GET', '/v1/marketfront/orders?limit=100', caller.marketKey);
    expect(list.status, list.text).toBe(200);
    const orderIds = ids(list.body.orders as { orderId: string }[], 'orderId');
    expect(orderIds).toContain(caller.orderId);
    expect(orderIds).not.toContain(data.orderId);
  },
  'GET /v1/marketfront/orders/{orderId}/timeline': async (data, caller) => {
    expectNotFound(
      await send('GET', `/v1/marketfront/orders/${data.orderId}/timeline`, caller.marketKey),
      'ORDER_NOT_FOUND',
    );
    // The caller's own timeline lists only its own order's webhook tries.
    const own = await send(
      'GET',
      `/v1/marketfront/orders/${caller.orderId}/timeline`,
      caller.marketKey,
    );
    expect(own.status, own.text).toBe(200);
    const tries = (own.body.events as { kind: string; deliveryId?: string }[]).filter(
      (event) => event.kind === 'webhook',
    );
    expect(ids(tries, 'deliveryId')).not.toContain(data.deliveryId);
  },
  'GET /v1/commerce/stores/{storeId}/orders': async (data, caller) => {
    expectNotFound(
      await send('GET', `/v1/commerce/stores/${data.storeId}/orders`, caller.commerceKey),
      'STORE_NOT_FOUND',
    );
    const own = await send(
      'GET',
      `/v1/commerce/stores/${caller.storeId}/orders`,
      caller.commerceKey,
    );
    expect(own.status, own.text).toBe(200);
    expect(ids(own.body.orders as { orderId: string }[], 'orderId')).not.toContain(data.orderId);
  },
  'POST /v1/commerce/orders/{orderId}/status': async (data, caller) =>
    expectNotFound(
      await send('POST', `/v1/commerce/orders/${data.orderId}/status`, caller.commerceKey, {
        body: { status: 'confirmed' },
      }),
      'ORDER_NOT_FOUND',
    ),
  'PUT /v1/marketfront/webhooks': async (data, caller) => {
    const put = await send('PUT', '/v1/marketfront/webhooks', caller.marketKey, {
      body: { url: caller.webhookUrl, events: ['order.created', 'order.status_changed'] },
    });
    expect(put.status, put.text).toBe(200); // replaced its own mode's endpoint
    expect((await webhookEndpoint(data)).url).toBe(data.webhookUrl);
  },
  'GET /v1/marketfront/webhooks': async (data, caller) => {
    expect((await webhookEndpoint(caller)).url).toBe(caller.webhookUrl);
    expect(caller.webhookUrl).not.toBe(data.webhookUrl);
  },
  'POST /v1/marketfront/webhooks/rotate-secret': async (data, caller) => {
    const before = await webhookEndpoint(data);
    const rotated = await send('POST', '/v1/marketfront/webhooks/rotate-secret', caller.marketKey);
    expect(rotated.status, rotated.text).toBe(200);
    expect(await webhookEndpoint(data)).toEqual(before);
  },
  'GET /v1/marketfront/webhooks/deliveries': async (data, caller) => {
    const list = await send('GET', '/v1/marketfront/webhooks/deliveries', caller.marketKey);
    expect(list.status, list.text).toBe(200);
    const deliveryIds = ids(list.body.deliveries as { deliveryId: string }[], 'deliveryId');
    expect(deliveryIds).toContain(caller.deliveryId);
    expect(deliveryIds).not.toContain(data.deliveryId);
  },
  'GET /v1/marketfront/webhooks/deliveries/{deliveryId}/attempts': async (data, caller) => {
    expectNotFound(
      await send(
        'GET',
        `/v1/marketfront/webhooks/deliveries/${data.deliveryId}/attempts`,
        caller.marketKey,
      ),
      'WEBHOOK_DELIVERY_NOT_FOUND',
    );
    const own = await send(
      'GET',
      `/v1/marketfront/webhooks/deliveries/${caller.deliveryId}/attempts`,
      caller.marketKey,
    );
    expect(own.status, own.text).toBe(200);
    expect(own.body.deliveryId).toBe(caller.deliveryId);
  },
  'POST /v1/marketfront/webhooks/deliveries/{deliveryId}/resend': async (data, caller) =>
    expectNotFound(
      await send(
        'POST',
        `/v1/marketfront/webhooks/deliveries/${data.deliveryId}/resend`,
        caller.marketKey,
      ),
      'WEBHOOK_DELIVERY_NOT_FOUND',
    ),
  'GET /v1/marketfront/payments/cards': async (data, caller) => {
    const cards = await cardsOf(caller);
    expect(cards).toContain(caller.paymentId);
    expect(cards).not.toContain(data.paymentId);
  },
  'POST /v1/marketfront/payments/cards': async (data, caller) => {
    const before = await cardsOf(data);
    const vaulted = await send('POST', '/v1/marketfront/payments/cards', caller.marketKey, {
      headers: asEndUser,
      body: TEST_CARD,
    });
    expect(vaulted.status, vaulted.text).toBeLessThan(300); // 200: this mode has the card
    expect(await cardsOf(data)).toEqual(before);
  },
  'DELETE /v1/marketfront/payments/cards/{paymentId}': async (data, caller) => {
    expectProblem(
      await send('DELETE', `/v1/marketfront/payments/cards/${data.paymentId}`, caller.marketKey, {
        headers: asEndUser,
      }),
      400,
      ['PAYMENT_TOKEN_INVALID'],
    );
    expect(await cardsOf(data)).toContain(data.paymentId);
  },
  'POST /v1/marketfront/stores/discover': async (data, caller) => {
    // Both modes' stores stand at the same address; only the caller's mode is found.
    const found = await send('POST', '/v1/marketfront/stores/discover', caller.marketKey, {
      body: {
        location: {
          address1: '233 S Wacker Dr',
          city: 'Chicago',
          state: 'IL',
          postalCode: '60606',
          country: 'US',
        },
        fulfillmentType: 'PICKUP',
        limit: 100,
      },
    });
    expect(found.status, found.text).toBe(200);
    const storeIds = ids(found.body.stores as { storeId: string }[], 'storeId');
    expect(storeIds).toContain(caller.storeId);
    expect(storeIds).not.toContain(data.storeId);
  },
  'POST /v1/marketfront/carts/add': async (data, caller) =>
    expectNotFound(
      await send('POST', '/v1/marketfront/carts/add', caller.marketKey, {
        body: {
          item: cartLine(data),
          cart: null,
          catalogSetId: data.ids.catalogSetId,
          storeId: data.storeId,
        },
      }),
      'STORE_NOT_FOUND',
    ),
  'POST /v1/marketfront/carts/remove': async (data, caller) => {
    const cart = cartOf(data);
    expectNotFound(
      await send('POST', '/v1/marketfront/carts/remove', caller.marketKey, {
        body: { cart, lineItemId: cart.lineItems[0]!.lineItemId },
      }),
      'STORE_NOT_FOUND',
    );
  },
  'POST /v1/marketfront/carts/update': async (data, caller) => {
    const cart = cartOf(data);
    expectNotFound(
      await send('POST', '/v1/marketfront/carts/update', caller.marketKey, {
        body: { cart, lineItemId: cart.lineItems[0]!.lineItemId, quantity: 2 },
      }),
      'STORE_NOT_FOUND',
    );
  },
  'POST /v1/marketfront/orders/validate': async (data, caller) => {
    const validate = (body: unknown) =>
      send('POST', '/v1/marketfront/orders/validate', caller.marketKey, {
        headers: asEndUser,
        body,
      });
    // The caller's own store, with the other mode's card and saved address.
    const mixed = await validate({
      ...orderBody(caller, data),
      fulfillment: {
        mode: 'DELIVERY_BY_MERCHANT',
        scheduleType: 'ASAP',
        address: { addressId: data.addressId },
        deliveryType: 'DOOR_TO_DOOR',
      },
    });
    expect(mixed.status, mixed.text).toBe(200);
    expect(mixed.body.isValid).toBe(false);
    const codes = (mixed.body.errors as { code: string }[]).map(({ code }) => code);
    expect(codes).toEqual(expect.arrayContaining(['PAYMENT_TOKEN_INVALID', 'ADDRESS_INVALID']));
    // The other mode's store.
    expectNotFound(await validate(orderBody(data, caller)), 'STORE_NOT_FOUND');
  },
  'POST /v1/marketfront/orders/place': async (data, caller) => {
    const place = (body: unknown) =>
      send('POST', '/v1/marketfront/orders/place', caller.marketKey, {
        headers: { ...asEndUser, 'Idempotency-Key': randomUUID() },
        body,
      });
    const otherCard = await place(orderBody(caller, data));
    expectProblem(otherCard, 400, ['PAYMENT_TOKEN_INVALID', 'ORDER_INVALID']);
    expect(otherCard.text).toContain('PAYMENT_TOKEN_INVALID');
    expectNotFound(await place(orderBody(data, caller)), 'STORE_NOT_FOUND');
  },
  'POST /v1/test/orders/{orderId}/advance': async (data, caller) => {
    const advance = (apiKey: string) =>
      send('POST', `/v1/test/orders/${data.orderId}/advance`, apiKey, {
        body: { to: 'confirmed' },
      });
    await testOnly(
      caller,
      () => advance(caller.commerceKey),
      async () => {
        expectNotFound(await advance(caller.commerceKey), 'ORDER_NOT_FOUND');
        expectNotFound(await advance(caller.marketKey), 'ORDER_NOT_FOUND');
      },
    );
    const order = await send('GET', `/v1/marketfront/orders/${data.orderId}`, data.marketKey);
    expect(order.body.status).toBe('pending');
  },
  'POST /v1/test/stores/{storeId}/orders': async (data, caller) => {
    const placeAt = () =>
      send('POST', `/v1/test/stores/${data.storeId}/orders`, caller.commerceKey, { body: {} });
    await testOnly(caller, placeAt, async () => expectNotFound(await placeAt(), 'STORE_NOT_FOUND'));
  },
  'GET /v1/marketfront/webhooks/stream': async (data, caller) => {
    const stream = () =>
      fetch(`${platform.baseUrl}/v1/marketfront/webhooks/stream`, {
        headers: { authorization: `Bearer ${caller.marketKey}` },
        signal: AbortSignal.timeout(3_000),
      });
    if (caller.mode === 'live') {
      const refused = await stream();
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { errorCode: string }).errorCode).toBe('FORBIDDEN');
      return;
    }
    const response = await stream();
    expect(response.status).toBe(200);
    // A live delivery sent again while the test stream is open never reaches the stream.
    const resent = await send(
      'POST',
      `/v1/marketfront/webhooks/deliveries/${data.deliveryId}/resend`,
      data.marketKey,
    );
    expect(resent.status, resent.text).toBeLessThan(300);
    let streamed = '';
    try {
      for await (const chunk of response.body!) streamed += Buffer.from(chunk).toString();
    } catch (error) {
      expect((error as Error).name).toMatch(/TimeoutError|AbortError/);
    }
    expect(streamed).not.toContain(data.orderId);
  },
  'GET /v1/commerce/stores/{storeId}/events': async (data, caller) => {
    expectNotFound(
      await send('GET', `/v1/commerce/stores/${data.storeId}/events`, caller.commerceKey),
      'STORE_NOT_FOUND',
    );
    // The other mode's store pauses and resumes: its own stream hears it, the caller's none.
    await withStreams(
      [
        [`/v1/commerce/stores/${data.storeId}/events`, data.commerceKey],
        [`/v1/commerce/stores/${caller.storeId}/events`, caller.commerceKey],
      ],
      async ([own, other]) => {
        for (const status of ['paused', 'online']) {
          const set = await send(
            'POST',
            `/v1/commerce/stores/${data.storeId}/status`,
            data.commerceKey,
            {
              body: { status, ...(status === 'paused' ? { reason: 'too_busy' } : {}) },
            },
          );
          expect(set.status, set.text).toBeLessThan(300);
        }
        await own!.waitFor(2);
        expect(own!.events.map((event) => event.event)).toEqual([
          'store.status_changed',
          'store.status_changed',
        ]);
        expect(other!.events).toEqual([]);
      },
    );
  },
  'GET /v1/marketfront/events': async (data, caller) => {
    // A delivery of the other mode tried again: its tenant's stream hears it, the caller's none.
    await withStreams(
      [
        ['/v1/marketfront/events', data.marketKey],
        ['/v1/marketfront/events', caller.marketKey],
      ],
      async ([own, other]) => {
        const resent = await send(
          'POST',
          `/v1/marketfront/webhooks/deliveries/${data.deliveryId}/resend`,
          data.marketKey,
        );
        expect(resent.status, resent.text).toBeLessThan(300);
        const [attempt] = await own!.waitFor(1, 15_000);
        expect(attempt!.event).toBe('webhook.delivery_attempted');
        expect(JSON.parse(attempt!.data)).toMatchObject({
          deliveryId: data.deliveryId,
          orderId: data.orderId,
        });
        expect(other!.events).toEqual([]);
      },
    );
  },
  'POST /v1/sessions': async (data, caller) => {
    // A session is of its key's mode: it reads the other mode's data as a stranger would.
    const session = await signIn(caller.commerceKey);
    expect(session.body.mode).toBe(caller.mode);
    expectNotFound(
      await session.send('GET', `/v1/commerce/stores/${data.storeId}`),
      'STORE_NOT_FOUND',
    );
    const list = await session.send('GET', '/v1/commerce/stores?limit=100');
    expect(ids(list.body.stores as { storeId: string }[], 'storeId')).not.toContain(data.storeId);
    const market = await signIn(caller.marketKey);
    expectNotFound(
      await market.send('GET', `/v1/marketfront/orders/${data.orderId}`),
      'ORDER_NOT_FOUND',
    );
  },
  'GET /v1/sessions/current': async (data, caller) => {
    const mine = await signIn(caller.marketKey);
    const theirs = await signIn(data.marketKey);
    const current = await mine.send('GET', '/v1/sessions/current');
    expect(current.body).toEqual(mine.body);
    expect(current.body.partnerId).not.toBe(theirs.body.partnerId);
  },
  'DELETE /v1/sessions/current': async (data, caller) => {
    // Signing out one mode's session leaves the same partner's session of the other mode.
    const mine = await signIn(caller.commerceKey);
    const theirs = await signIn(data.commerceKey);
    expect((await mine.send('DELETE', '/v1/sessions/current')).status).toBe(204);
    expect((await theirs.send('GET', '/v1/sessions/current')).status).toBe(200);
  },
  ...accountCases('commerce'),
  ...accountCases('marketfront'),
  'POST /v1/test/reset': async (data, caller) => {
    const reset = () => send('POST', '/v1/test/reset', caller.commerceKey);
    await testOnly(caller, reset, async () => {
      const done = await reset();
      expect(done.status, done.text).toBe(200);
      const distributionReset = await send('POST', '/v1/test/reset', caller.marketKey);
      expect(distributionReset.status, distributionReset.text).toBe(200);
      // The live data is all there.
      const store = await send('GET', `/v1/commerce/stores/${data.storeId}`, data.commerceKey);
      expect(store.status, store.text).toBe(200);
      const order = await send('GET', `/v1/marketfront/orders/${data.orderId}`, data.marketKey);
      expect(order.status, order.text).toBe(200);
      expect(await cardsOf(data)).toContain(data.paymentId);
      expect(await addressesOf(data)).toContain(data.addressId);
    });
  },
};

/**
 * Open a live stream for each `[path, apiKey]`, run `check` with them, and close them. The
 * streams share one source, so once one has an event every other one has it too if it ever will.
 */
async function withStreams(
  opened: [path: string, apiKey: string][],
  check: (streams: OpenStream[]) => Promise<void>,
) {
  const streams = await Promise.all(
    opened.map(([path, apiKey]) =>
      openSse(new URL(path, platform.baseUrl), { authorization: `Bearer ${apiKey}` }),
    ),
  );
  try {
    for (const stream of streams) expect(stream.status, stream.text()).toBe(200);
    await check(streams);
  } finally {
    for (const stream of streams) stream.drop();
  }
}

/** A key of `mode` for the partner: its first (live) key, or a test key made beside it. */
async function keyOf(partner: { partnerId: string; apiKey: string }, mode: Mode) {
  if (mode === 'live') return partner.apiKey;
  const { apiKey } = await createKey(platform.gatewayDb, partner.partnerId, { mode });
  expect(apiKey.startsWith('pcp_test_'), 'a test key').toBe(true);
  return apiKey;
}

/** What `mode`'s keys make, through the API as a partner would. */
async function buildWorld(
  mode: Mode,
  partners: {
    commerce: { partnerId: string; apiKey: string };
    market: { partnerId: string; apiKey: string };
  },
): Promise<World> {
  const commerceKey = await keyOf(partners.commerce, mode);
  const marketKey = await keyOf(partners.market, mode);
  const commerce = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: commerceKey });

  const storeId = randomUUID();
  const put = await send('PUT', `/v1/commerce/stores/${storeId}`, commerceKey, {
    body: storeProfile({
      availability: alwaysOpen,
      minimumOrder: 5,
      orderSubmissionUrl: undefined,
    }),
  });
  expect(put.status, put.text).toBeLessThan(300);
  const catalog = cartTestCatalog(storeId);
  const ingest = await ingestCatalog(commerce, {
    storeId,
    callbackUrl: host.serveJson(`/${randomUUID()}.json`, catalog.document),
    timeoutMs: 30_000,
  });
  expect(ingest.status).toBe('succeeded');

  const receiver = await startWebhookReceiver();
  receivers.push(receiver);
  const endpoint = await send('PUT', '/v1/marketfront/webhooks', marketKey, {
    body: { url: receiver.url, events: ['order.created', 'order.status_changed'] },
  });
  expect(endpoint.status, endpoint.text).toBe(201);

  const card = await send('POST', '/v1/marketfront/payments/cards', marketKey, {
    headers: asEndUser,
    body: TEST_CARD,
  });
  expect(card.status, card.text).toBe(201);
  const address = await send('POST', '/v1/marketfront/addresses', marketKey, {
    headers: asEndUser,
    body: { address1: '401 N Wabash Ave', city: 'Chicago', state: 'IL', postalCode: '60611' },
  });
  expect(address.status, address.text).toBeLessThan(300);
  const placed = await send('POST', '/v1/marketfront/orders/place', marketKey, {
    headers: { ...asEndUser, 'Idempotency-Key': randomUUID() },
    body: sodaOrder(catalog.ids, storeId, card.body.paymentId),
  });
  expect(placed.status, placed.text).toBe(201);
  await receiver.waitFor(1, undefined, 15_000);
  const deliveries = await send('GET', '/v1/marketfront/webhooks/deliveries', marketKey);
  const deliveryId = (deliveries.body.deliveries as { deliveryId: string }[])[0]?.deliveryId;
  expect(deliveryId, deliveries.text).toBeDefined();

  return {
    mode,
    commerceKey,
    marketKey,
    storeId,
    ids: catalog.ids,
    catalogDocument: catalog.document,
    catalogIngestId: ingest.catalogIngestId,
    orderId: placed.body.orderId,
    paymentId: card.body.paymentId,
    addressId: address.body.addressId,
    deliveryId: deliveryId!,
    webhookUrl: receiver.url,
  };
}

it('has a case for every operation of the OpenAPI document, and for no other', async () => {
  const document = (await buildOpenApiDocument()) as {
    paths: Record<string, Partial<Record<(typeof methods)[number], unknown>>>;
  };
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    methods.filter((method) => item[method]).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(Object.keys(cases).sort()).toEqual(operations.sort());
});

describe('live and test data never meet', () => {
  beforeAll(async () => {
    env = await createTestEnvironment();
    platform = await startPlatform(env, {
      orderingEnv: {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_POLL_MS: '100',
      },
    });
    host = await startCatalogHost();
    const commerce = await platform.newPartner('commerce');
    const market = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    const unlimited = { reads: 100_000, writes: 100_000, discovery: 100_000 };
    await setRateLimits(platform.gatewayDb, commerce.partnerId, unlimited);
    await setRateLimits(platform.gatewayDb, market.partnerId, unlimited);
    worlds.live = await buildWorld('live', { commerce, market });
    worlds.test = await buildWorld('test', { commerce, market });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await host?.close();
    await platform?.stop();
    await env?.cleanup();
  });

  // Test data seen with live keys first: the reset (last) with a test key ends the test world.
  describe.each([
    ['test', 'live'],
    ['live', 'test'],
  ] as const)('data made in %s mode, called with %s keys', (data, caller) => {
    it.each(Object.keys(cases))('%s', async (operation) => {
      await cases[operation]!(worlds[data], worlds[caller]);
    });
  });
});
