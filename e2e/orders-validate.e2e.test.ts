import {
  createPlatformClient,
  ingestCatalog,
  type operations,
  type PlatformClient,
} from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer } from './orders.js';

const VALIDATE = '/v1/marketfront/orders/validate';
let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: PlatformClient;
let distribution: { apiKey: string };
let market: PlatformClient;
let storeId: string;
let ids: ReturnType<typeof cartTestCatalog>['ids'];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
  });
  host = await startCatalogHost();
  const clientOf = (partner: { apiKey: string }) =>
    createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
  commerce = clientOf(await platform.newPartner('commerce'));
  distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
  market = clientOf(distribution);
  storeId = randomUUID();
  // Open all week, pickup minimum 5.00, delivery within 5 km for 2.99 from 15.00, tax 8.75%.
  const put = await commerce.PUT('/v1/commerce/stores/{storeId}', {
    params: { path: { storeId } },
    body: storeProfile({ availability: alwaysOpen, minimumOrder: 5 }),
  });
  expect(put.response.status).toBe(201);
  const catalog = cartTestCatalog(storeId);
  ids = catalog.ids;
  const ingest = await ingestCatalog(commerce, {
    storeId,
    callbackUrl: host.serveJson(`/${randomUUID()}.json`, catalog.document),
    timeoutMs: 30_000,
  });
  expect(ingest.errors).toEqual([]);
  expect(ingest.status).toBe('succeeded');
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

type OrderRequest = operations['validateOrder']['requestBody']['content']['application/json'];
type LineItem = OrderRequest['cart']['lineItems'][number];
type Fulfillment = OrderRequest['fulfillment'];
type Delivery = Extract<Fulfillment, { mode: 'DELIVERY_BY_MERCHANT' }>;

const line = (
  itemId: string,
  quantity = 1,
  modifierGroups?: LineItem['modifierGroups'],
): LineItem => ({
  itemId,
  lineItemId: randomUUID(),
  quantity,
  ...(modifierGroups ? { modifierGroups } : {}),
});

/** Ten sodas (19.90), picked up as soon as possible, with a 2.00 tip. */
const order = (overrides: Partial<OrderRequest> = {}): OrderRequest => ({
  cart: { catalogSetId: ids.catalogSetId, storeId, lineItems: [line(ids.soda, 10)] },
  fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
  client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
  paymentType: 'CARD',
  tip: 2,
  ...overrides,
});

const delivery = (address: Delivery['address'], extra: Partial<Delivery> = {}): Delivery => ({
  mode: 'DELIVERY_BY_MERCHANT',
  scheduleType: 'ASAP',
  address,
  deliveryType: 'DOOR_TO_DOOR',
  ...extra,
});
const nearby = { address1: '100 S Wacker Dr', city: 'Chicago', state: 'IL', postalCode: '60606' };

const validate = (
  body: OrderRequest,
  client = market,
  headers: Record<string, string> = { 'x-end-user-id': 'shopper-1' },
) => client.POST(VALIDATE, { body, headers });

/** Validate what the types forbid (a malformed field), as raw HTTP. */
const validateRaw = (body: unknown) =>
  call(platform.baseUrl, 'POST', VALIDATE, {
    apiKey: distribution.apiKey,
    body,
    headers: { 'x-end-user-id': 'shopper-1' },
  });

const ADDRESSES = '/v1/marketfront/addresses';
const endUserHeader = (endUser: string) => ({ 'X-End-User-Id': endUser });
const saveAddress = (endUser: string, body: typeof nearby & { country?: string }) =>
  market.POST(ADDRESSES, { body, params: { header: endUserHeader(endUser) } });
const listAddresses = (endUser: string) =>
  market.GET(ADDRESSES, { params: { header: endUserHeader(endUser) } });
const deleteAddress = (endUser: string, addressId: string) =>
  market.DELETE('/v1/marketfront/addresses/{addressId}', {
    params: { path: { addressId }, header: endUserHeader(endUser) },
  });

/** The (code, pointer) pairs of a validate answer, which must be a 200 refusing to price. */
async function problemsOf(body: OrderRequest): Promise<[string, string | null][]> {
  const { data, response } = await validate(body);
  expect(response.status).toBe(200);
  expect(data?.isValid).toBe(false);
  expect(data?.amounts).toBeNull();
  return data!.errors.map((error) => [error.code, error.pointer]);
}

describe('a valid order', () => {
  it('is priced: tax half up once on the subTotal, the tip, no fee for pickup', async () => {
    const result = await validate(order());
    expect(result.response.status).toBe(200);
    expect(result.data).toMatchObject({
      isValid: true,
      errors: [],
      amounts: {
        currency: 'USD',
        subTotal: 19.9,
        fees: 0,
        feesBreakdown: [],
        promotions: 0,
        taxes: 1.74, // 8.75% of 19.90 = 1.74125
        taxesBreakdown: [{ type: 'SALES_TAX', rate: 0.0875, amount: 1.74 }],
        adjustments: 0,
        tip: 2,
        total: 23.64,
      },
      cart: { subTotal: 19.9, itemCount: 10 },
      fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP', scheduledTime: null, address: null },
      client: { ip: '8.8.4.4' },
      paymentType: 'CARD',
    });
  });

  it('is delivered: the delivery fee, and the address resolved and geocoded, flat', async () => {
    const result = await validate(
      order({
        fulfillment: delivery(nearby, { instructions: 'Ring twice' }),
        amounts: { total: 26.63 },
      }),
    );
    expect(result.data).toMatchObject({
      isValid: true,
      amounts: { fees: 2.99, feesBreakdown: [{ type: 'DELIVERY', amount: 2.99 }], total: 26.63 },
      fulfillment: {
        mode: 'DELIVERY_BY_MERCHANT',
        deliveryType: 'DOOR_TO_DOOR',
        instructions: 'Ring twice',
      },
    });
    // One object, the shape of a store's address (docs/guide/stores.md#store-profile).
    expect(result.data?.fulfillment.address).toEqual({
      ...nearby,
      address2: null,
      country: 'US',
      latitude: expect.any(Number),
      longitude: expect.any(Number),
    });
  });
});

describe('business problems: 200, isValid false, amounts null, each at its pointer', () => {
  it('fulfillment rules', async () => {
    expect(
      await problemsOf(order({ fulfillment: { mode: 'PICKUP', scheduleType: 'SCHEDULED' } })),
    ).toEqual([['SCHEDULED_TIME_REQUIRED', '/fulfillment/scheduledTime']]);
    expect(
      await problemsOf(
        order({
          fulfillment: {
            mode: 'PICKUP',
            scheduleType: 'SCHEDULED',
            scheduledTime: '2020-01-01T10:00:00Z',
          },
        }),
      ),
    ).toEqual([['SCHEDULED_TIME_IN_PAST', '/fulfillment/scheduledTime']]);
    expect(
      await problemsOf(
        order({
          fulfillment: {
            mode: 'PICKUP',
            scheduleType: 'ASAP',
            scheduledTime: '2030-01-01T10:00:00Z',
          },
        }),
      ),
    ).toEqual([['SCHEDULED_TIME_NOT_ALLOWED', '/fulfillment/scheduledTime']]);
    expect(
      await problemsOf(
        order({
          fulfillment: delivery(nearby, { instructions: 'x'.repeat(501) }),
          specialInstructions: 'y'.repeat(501),
        }),
      ),
    ).toEqual([
      ['INSTRUCTIONS_TOO_LONG', '/fulfillment/instructions'],
      ['INSTRUCTIONS_TOO_LONG', '/specialInstructions'],
    ]);
  });

  it('items: unavailable, outside their window, a required modifier missing', async () => {
    const cart = {
      catalogSetId: ids.catalogSetId,
      storeId,
      lineItems: [line(ids.soda, 10), line(ids.soldOut), line(ids.pancakes), line(ids.burger)],
    };
    expect(await problemsOf(order({ cart }))).toEqual([
      ['ITEM_UNAVAILABLE', '/cart/lineItems/1'],
      ['OUTSIDE_AVAILABILITY_WINDOW', '/cart/lineItems/2'],
      ['MODIFIER_REQUIRED', '/cart/lineItems/3'],
    ]);
  });

  it('delivery: out of range, an address that cannot be resolved, an unknown saved address', async () => {
    const far = { address1: '350 5th Ave', city: 'New York', state: 'NY', postalCode: '10118' };
    expect(await problemsOf(order({ fulfillment: delivery(far) }))).toEqual([
      ['DELIVERY_UNAVAILABLE', '/fulfillment/address'],
    ]);
    const nowhere = { ...nearby, postalCode: '00000' };
    expect(await problemsOf(order({ fulfillment: delivery(nowhere) }))).toEqual([
      ['ADDRESS_INVALID', '/fulfillment/address'],
    ]);
    expect(await problemsOf(order({ fulfillment: delivery({ addressId: randomUUID() }) }))).toEqual(
      [['ADDRESS_INVALID', '/fulfillment/address/addressId']],
    );
  });

  it('money: the minimum, precision, a total that changed', async () => {
    const oneSoda = { catalogSetId: ids.catalogSetId, storeId, lineItems: [line(ids.soda)] };
    expect(await problemsOf(order({ cart: oneSoda }))).toEqual([['MINIMUM_NOT_MET', '/cart']]);
    // Delivery has its own minimum (15.00): ten sodas pass it, one does not.
    expect(await problemsOf(order({ cart: oneSoda, fulfillment: delivery(nearby) }))).toEqual([
      ['MINIMUM_NOT_MET', '/cart'],
    ]);
    expect(await problemsOf(order({ tip: 2.005 }))).toEqual([['PRECISION_EXCEEDED', '/tip']]);
    expect(await problemsOf(order({ amounts: { total: 23.645 } }))).toEqual([
      ['PRECISION_EXCEEDED', '/amounts/total'],
    ]);
    expect(await problemsOf(order({ amounts: { total: 23.63 } }))).toEqual([
      ['ORDER_TOTAL_DIFFERENT', '/amounts/total'],
    ]);
  });

  it('the store: a stale CatalogSet, a payment type the partner may not take, a paused store', async () => {
    expect(
      await problemsOf(
        order({ cart: { catalogSetId: randomUUID(), storeId, lineItems: [line(ids.soda, 10)] } }),
      ),
    ).toEqual([['CATALOGSET_NOT_FOUND', '/cart/catalogSetId']]);
    expect(await problemsOf(order({ paymentType: 'PAY_AT_STORE' }))).toEqual([
      ['PAYMENT_TYPE_NOT_ALLOWED', '/paymentType'],
    ]);
    const setStatus = (
      body: operations['setStoreStatus']['requestBody']['content']['application/json'],
    ) =>
      commerce.POST('/v1/commerce/stores/{storeId}/status', {
        params: { path: { storeId } },
        body,
      });
    expect((await setStatus({ status: 'paused', reason: 'too_busy' })).response.status).toBe(200);
    try {
      // Validate reads the store's cached profile, dropped by the store's event
      // (docs/messaging.md): the pause shows once the event is in. The store's own refusal
      // points at the store; null is for a pointer nobody gave.
      await expect
        .poll(() => problemsOf(order()), { timeout: 5_000 })
        .toEqual([['STORE_CLOSED', '/cart/storeId']]);
    } finally {
      await setStatus({ status: 'online' });
    }
    await expect
      .poll(async () => (await validate(order())).data?.isValid, { timeout: 5_000 })
      .toBe(true);
  });
});

describe('the paymentId: a card of the end user (docs/guide/payments.md#cards)', () => {
  const VISA = '4242424242424242';
  const asUser = (endUser: string) => ({ 'x-end-user-id': endUser });

  it('validates with one of the end user’s cards', async () => {
    const { endUser, paymentId } = await newBuyer(market, VISA);
    const result = await validate(order({ paymentId }), market, asUser(endUser));
    expect(result.data).toMatchObject({ isValid: true, errors: [], amounts: { total: 23.64 } });
  });

  it('refuses a card that is not the end user’s with PAYMENT_TOKEN_INVALID at /paymentId', async () => {
    const refusedFor = async (paymentId: string, endUser: string) => {
      const { data, response } = await validate(order({ paymentId }), market, asUser(endUser));
      expect(response.status).toBe(200);
      expect(data).toMatchObject({ isValid: false, amounts: null });
      return data!.errors;
    };
    const tokenInvalid = [
      {
        code: 'PAYMENT_TOKEN_INVALID',
        message: 'No card with this paymentId belongs to the end user',
        pointer: '/paymentId',
      },
    ];
    const owner = await newBuyer(market, VISA);
    // Unknown, and another end user's of the same partner.
    expect(await refusedFor(randomUUID(), owner.endUser)).toEqual(tokenInvalid);
    expect(await refusedFor(owner.paymentId, `${owner.endUser}-other`)).toEqual(tokenInvalid);
    // Another partner's, vaulted for an end user of the same id.
    const elsewhere = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: (await platform.newPartner('distribution', { paymentTypes: ['CARD'] })).apiKey,
    });
    const foreign = await newBuyer(elsewhere, VISA);
    expect(await refusedFor(foreign.paymentId, foreign.endUser)).toEqual(tokenInvalid);
    // Deleted by its end user.
    const deleted = await market.DELETE('/v1/marketfront/payments/cards/{paymentId}', {
      params: { path: { paymentId: owner.paymentId }, header: endUserHeader(owner.endUser) },
    });
    expect(deleted.response.status).toBe(204);
    expect(await refusedFor(owner.paymentId, owner.endUser)).toEqual(tokenInvalid);
    // Listed with the order's other problems.
    const { data } = await validate(
      order({ paymentId: randomUUID(), tip: 2.005 }),
      market,
      asUser(owner.endUser),
    );
    expect(data?.errors.map((error) => [error.code, error.pointer])).toEqual([
      ['PAYMENT_TOKEN_INVALID', '/paymentId'],
      ['PRECISION_EXCEEDED', '/tip'],
    ]);
  });

  it('does not check a PAY_AT_STORE order’s paymentId, which place does not charge', async () => {
    expect(
      await problemsOf(order({ paymentType: 'PAY_AT_STORE', paymentId: randomUUID() })),
    ).toEqual([['PAYMENT_TYPE_NOT_ALLOWED', '/paymentType']]);
  });

  it('needs X-End-User-Id with a paymentId (401) and a GUID for it (400)', async () => {
    const { paymentId } = await newBuyer(market, VISA);
    const anonymous = await validate(order({ paymentId }), market, {});
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.error).toMatchObject({
      errorCode: 'SESSION_USER_REQUIRED',
      errorCategory: 'authentication',
    });
    expect(anonymous.response.headers.get('www-authenticate')).toBe('Bearer');
    // Without a paymentId (or addressId) the end user is optional.
    expect((await validate(order(), market, {})).data?.isValid).toBe(true);
    const malformed = await validateRaw({ ...order(), paymentId: 'card-1' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({
      errorCode: 'REQUEST_INVALID',
      errors: [expect.objectContaining({ pointer: '/paymentId' })],
    });
  });
});

describe('errors[] is capped at 100 and errorsOmitted counts the rest', () => {
  it('lists the first 100 problems and how many more there were', async () => {
    const lineItems = Array.from({ length: 100 }, () => line(ids.soldOut));
    const { data, response } = await validate(
      order({ cart: { catalogSetId: ids.catalogSetId, storeId, lineItems }, tip: 2.005 }),
    );
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ isValid: false, amounts: null });
    // 100 unavailable lines, then the tip's precision and the minimum, which are left out.
    expect(data?.errors).toHaveLength(100);
    expect(data?.errors.every((error) => error.code === 'ITEM_UNAVAILABLE')).toBe(true);
    expect(data?.errors.at(-1)?.pointer).toBe('/cart/lineItems/99');
    expect(data?.errorsOmitted).toBe(2);
    // Absent, not 0, when nothing was left out.
    const few = await validate(order({ tip: 2.005 }));
    expect(few.data?.errors).toHaveLength(1);
    expect(few.data).not.toHaveProperty('errorsOmitted');
  });
});

describe('4xx only where the contract gives one', () => {
  // Raw HTTP: the statuses and media type as sent, and a mode the types would not let through.
  it.each([
    [{ client: undefined }, 400, 'CLIENT_CONTEXT_REQUIRED'],
    [{ client: { ip: '8.8.4.4', userAgent: '  ' } }, 400, 'CLIENT_CONTEXT_REQUIRED'],
    [{ client: { ip: '192.168.0.10', userAgent: 'ua' } }, 400, 'CLIENT_IP_INVALID'],
    [{ client: { ip: '::ffff:127.0.0.1', userAgent: 'ua' } }, 400, 'CLIENT_IP_INVALID'],
    [{ client: { ip: '8.8.4.4', userAgent: 'u'.repeat(513) } }, 400, 'CLIENT_USER_AGENT_INVALID'],
    [{ fulfillment: { mode: 'DRONE', scheduleType: 'ASAP' } }, 400, 'REQUEST_INVALID'],
    [{ tip: -1 }, 400, 'REQUEST_INVALID'],
    [
      { cart: { catalogSetId: randomUUID(), storeId: randomUUID(), lineItems: [] } },
      404,
      'STORE_NOT_FOUND',
    ],
  ])('%j → %i %s', async (overrides, status, errorCode) => {
    const result = await validateRaw({ ...order(), ...overrides });
    expect(result.status).toBe(status);
    expect(result.body.errorCode).toBe(errorCode);
    expect(result.headers.get('content-type')).toContain('application/problem+json');
  });

  it('answers malformed JSON, a missing key and a commerce key with a ProblemDetail', async () => {
    const malformed = await call(platform.baseUrl, 'POST', VALIDATE, {
      apiKey: distribution.apiKey,
      rawBody: '{"cart": ',
    });
    expect(malformed.body.errorCode).toBe('REQUEST_INVALID');
    const anonymous = await call(platform.baseUrl, 'POST', VALIDATE, { body: order() });
    expect(anonymous.status).toBe(401);
    expect((await validate(order(), commerce)).response.status).toBe(403);
  });
});

describe('saved addresses', () => {
  it('saves, lists, resolves in validate, scopes to the end user and deletes', async () => {
    const saved = await saveAddress('saver', nearby);
    expect(saved.response.status).toBe(201);
    expect(saved.data).toMatchObject({
      addressId: expect.any(String),
      address1: '100 S Wacker Dr',
      postalCode: '60606',
      country: 'US',
      latitude: expect.any(Number),
      longitude: expect.any(Number),
    });
    const { addressId, latitude, longitude } = saved.data!;
    // The same address, spelled differently, keeps its addressId.
    const again = await saveAddress('saver', { ...nearby, address1: '  100 s  WACKER dr ' });
    expect(again.response.status).toBe(200);
    expect(again.data).toMatchObject({ addressId });
    const listed = await listAddresses('saver');
    expect(listed.data?.addresses.map((entry) => entry.addressId)).toEqual([addressId]);

    const byId = order({ fulfillment: delivery({ addressId }) });
    const valid = await validate(byId, market, { 'x-end-user-id': 'saver' });
    expect(valid.data).toMatchObject({ isValid: true, amounts: { fees: 2.99 } });
    expect(valid.data?.fulfillment.address).toEqual({
      ...nearby,
      address2: null,
      country: 'US',
      latitude,
      longitude,
    });
    expect(await problemsOf(byId)).toEqual([['ADDRESS_INVALID', '/fulfillment/address/addressId']]);
    const anonymous = await validate(byId, market, {});
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.error?.errorCode).toBe('SESSION_USER_REQUIRED');

    const foreign = await deleteAddress('someone-else', addressId);
    expect(foreign.response.status).toBe(422);
    expect(foreign.error?.errorCode).toBe('ADDRESS_INVALID');
    expect((await deleteAddress('saver', addressId)).response.status).toBe(204);
    expect((await deleteAddress('saver', addressId)).response.status).toBe(204);
    expect((await listAddresses('saver')).data?.addresses).toEqual([]);
    const stale = await validate(byId, market, { 'x-end-user-id': 'saver' });
    expect(stale.data?.errors).toMatchObject([
      { code: 'ADDRESS_INVALID', pointer: '/fulfillment/address/addressId' },
    ]);
  });

  it('refuses what cannot be saved with a ProblemDetail', async () => {
    const unresolvable = await saveAddress('saver', { ...nearby, postalCode: '00000' });
    expect(unresolvable.response.status).toBe(422);
    expect(unresolvable.error?.errorCode).toBe('ADDRESS_INVALID');
    expect(unresolvable.error?.errors?.[0]?.pointer).toBe('/address/postalCode');
    // Without X-End-User-Id, which the types require: raw HTTP.
    const noUser = await call(platform.baseUrl, 'POST', ADDRESSES, {
      apiKey: distribution.apiKey,
      body: nearby,
    });
    expect(noUser).toMatchObject({ status: 401, body: { errorCode: 'SESSION_USER_REQUIRED' } });
    // A number where the types want a string: raw HTTP.
    const shape = await call(platform.baseUrl, 'POST', ADDRESSES, {
      apiKey: distribution.apiKey,
      body: { address1: 7 },
      headers: { 'x-end-user-id': 'saver' },
    });
    expect(shape).toMatchObject({ status: 400, body: { errorCode: 'REQUEST_INVALID' } });
    const nul = await saveAddress('saver', { ...nearby, city: 'Chi\u0000cago' });
    expect(nul.error?.errorCode).toBe('REQUEST_INVALID');
    const badId = await deleteAddress('saver', 'not-a-uuid');
    expect(badId.error?.errorCode).toBe('REQUEST_INVALID');
  });

  it('caps an end user at 50 addresses with 409 ADDRESS_LIMIT_REACHED', async () => {
    const results = await Promise.all(
      Array.from({ length: 52 }, (_, index) =>
        saveAddress('collector', { ...nearby, address1: `${index + 1} S Wacker Dr` }),
      ),
    );
    expect(results.filter((result) => result.response.status === 201)).toHaveLength(50);
    const refused = results.filter((result) => result.response.status === 409);
    expect(refused).toHaveLength(2);
    expect(refused[0]!.error?.errorCode).toBe('ADDRESS_LIMIT_REACHED');
  });
});
