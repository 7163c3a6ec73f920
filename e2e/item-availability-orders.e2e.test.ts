import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { loadConfig } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { createOrderingService, orderingEnvSchema } from '@pcp/ordering';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';

// Overrides set through the gateway reach carts, validate and place on two ordering replicas
// at once (docs/guide/carts.md#what-a-call-checks): stores announces each change, and validate
// and place compare the version their order context names.
let env: TestEnvironment;
let platform: TestPlatform;
let secondOrdering: ReturnType<typeof createOrderingService>;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let commerce: { apiKey: string };
let distribution: { apiKey: string };
let market: PlatformClient;
let storeId: string;
let ids: ReturnType<typeof cartTestCatalog>['ids'];
/** The stores' and both orderings' clock: real time moved on by `shift` ms. */
let shift = 0;
const clock = () => new Date(Date.now() + shift);

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    clock,
  });
  secondOrdering = createOrderingService({
    ...platform.serviceDeps('ordering'),
    db: platform.orderingDb,
    config: loadConfig(orderingEnvSchema, {}),
    clock,
  });
  await secondOrdering.start();
  host = await startCatalogHost();
  const owner = await platform.newPartner('commerce');
  commerce = owner;
  distribution = await platform.newPartner('distribution');
  market = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: distribution.apiKey });
  const clientOfOwner = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: owner.apiKey });
  ({ storeId, ids } = await storeWithSodas(clientOfOwner, host));
});

afterAll(async () => {
  await secondOrdering?.stop(5_000);
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

const setOverrides = (items: unknown[]) =>
  call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}/item-availability`, {
    apiKey: commerce.apiKey,
    body: { items },
  });

const validateSodas = (scheduledTime?: string) =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/orders/validate', {
    apiKey: distribution.apiKey,
    body: sodaOrder(ids, storeId, randomUUID(), {
      paymentType: 'PAY_AT_STORE',
      paymentId: undefined,
      ...(scheduledTime
        ? { fulfillment: { mode: 'PICKUP', scheduleType: 'SCHEDULED', scheduledTime } }
        : {}),
    }),
  });

/** `count` validates at once: the queue group spreads them over both replicas. */
async function errorsOfValidates(count: number, scheduledTime?: string) {
  const answers = await Promise.all(
    Array.from({ length: count }, () => validateSodas(scheduledTime)),
  );
  for (const answer of answers) expect(answer.status).toBe(200);
  return answers.map((answer) =>
    (answer.body.errors as { code: string; pointer: string }[]).map(({ code, pointer }) => ({
      code,
      pointer,
    })),
  );
}

/** The sodas refused: the cart then prices at zero, under the minimum and the total seen. */
const sodasRefused = [
  { code: 'ITEM_UNAVAILABLE', pointer: '/cart/lineItems/0' },
  { code: 'MINIMUM_NOT_MET', pointer: '/cart' },
  { code: 'ORDER_TOTAL_DIFFERENT', pointer: '/amounts/total' },
];

const addSoda = () =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/carts/add', {
    apiKey: distribution.apiKey,
    body: {
      cart: null,
      storeId,
      catalogSetId: ids.catalogSetId,
      item: { itemId: ids.soda, lineItemId: randomUUID(), quantity: 1 },
    },
  });

describe('item availability overrides in carts and orders', () => {
  it('refuses an overridden item in the next cart, validate and place on either replica, and takes it back when cleared', async () => {
    // Both replicas price the store before the change.
    expect(await errorsOfValidates(12)).toEqual(Array(12).fill([]));

    const until = new Date(clock().getTime() + 3_600_000).toISOString();
    const set = await setOverrides([{ itemId: ids.soda, available: false, until }]);
    expect(set.status).toBe(200);

    expect(await errorsOfValidates(12)).toEqual(Array(12).fill(sodasRefused));
    const carts = await Promise.all(Array.from({ length: 8 }, addSoda));
    for (const cart of carts) {
      expect(cart.status).toBe(400);
      expect(cart.body.errorCode).toBe('CART_INVALID');
      expect(cart.body.errors).toEqual([
        {
          code: 'ITEM_UNAVAILABLE',
          message: `Soda is not available until ${until}`,
          pointer: '/item',
        },
      ]);
    }
    const { endUser, paymentId } = await newBuyer(market, '4242424242424242');
    const before = platform.processor.charges().length;
    const placed = await call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
      apiKey: distribution.apiKey,
      headers: { 'idempotency-key': randomUUID(), 'x-end-user-id': endUser },
      body: sodaOrder(ids, storeId, paymentId),
    });
    expect(placed.status).toBe(400);
    expect(placed.body.errorCode).toBe('ORDER_INVALID');
    expect(placed.body.errors).toMatchObject(sodasRefused);
    expect(platform.processor.charges()).toHaveLength(before);

    // An order scheduled after until is taken.
    const later = new Date(Date.parse(until) + 30 * 60_000).toISOString();
    expect(await errorsOfValidates(4, later)).toEqual(Array(4).fill([]));

    const cleared = await setOverrides([{ itemId: ids.soda, available: true }]);
    expect(cleared.status).toBe(200);
    expect(await errorsOfValidates(12)).toEqual(Array(12).fill([]));
    expect((await addSoda()).status).toBe(200);
  });

  it('takes an item back when the clock passes its until, with no change at stores', async () => {
    const until = new Date(clock().getTime() + 10 * 60_000);
    expect(
      (await setOverrides([{ itemId: ids.soda, available: false, until: until.toISOString() }]))
        .status,
    ).toBe(200);
    // Validate at once (its order context names the new version); a cart once the change's
    // event has reached ordering (stores publishes it through its outbox right after replying).
    expect(await errorsOfValidates(8)).toEqual(Array(8).fill(sodasRefused));
    await expect.poll(async () => (await addSoda()).status).toBe(400);
    shift += 10 * 60_000 + 1_000;
    expect(await errorsOfValidates(8)).toEqual(Array(8).fill([]));
    expect((await addSoda()).status).toBe(200);
  });
});
