import { createPlatformClient, placeOrder, type PlatformClient } from '@pcp/client';
import { order as orderSchema } from '@pcp/contracts';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { newBuyer, refundSettled, sodaOrder, storeWithSodas } from './orders.js';

/**
 * Test money never reaches a real processor (docs/guide/payments.md#test-mode-payments): the
 * platform's own simulator stands for the live processor here, and a second one is the sandbox
 * of test mode. A test order is charged on the sandbox, and a background job (the acceptance
 * sweeper) refunds it there, with no partner request in flight.
 */

/** The acceptance window a store gets when its profile sets none. */
const WINDOW_MS = 600_000;
// Ordering reads this clock; the test moves it past the acceptance deadline.
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

let env: TestEnvironment;
let platform: TestPlatform;
let sandbox: ProcessorSimulator;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let market: PlatformClient;
let store: Awaited<ReturnType<typeof storeWithSodas>>;

beforeAll(async () => {
  env = await createTestEnvironment();
  sandbox = createProcessorSimulator();
  const sandboxUrl = await sandbox.listen();
  platform = await startPlatform(env, {
    clock,
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000' },
    paymentsEnv: { SANDBOX_PROCESSOR_URL: sandboxUrl },
    // The test sweeps when it means to.
    orderingEnv: { ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '60000' },
  });
  host = await startCatalogHost();
  // Test keys on both sides: a test order is placed at a test store.
  const commerce = await platform.newPartner('commerce', { mode: 'test' });
  const distribution = await platform.newPartner('distribution', {
    paymentTypes: ['CARD'],
    mode: 'test',
  });
  market = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: distribution.apiKey });
  store = await storeWithSodas(
    createPlatformClient({ baseUrl: platform.baseUrl, apiKey: commerce.apiKey }),
    host,
    // No submission URL: its orders wait pending for the store to accept them.
    { orderSubmissionUrl: undefined },
  );
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await sandbox?.close();
  await env?.cleanup();
});

describe('a test-mode card order', () => {
  it('is charged on the sandbox processor, and the acceptance sweeper refunds it there', async () => {
    const buyer = await newBuyer(market, '4242424242424242');
    const placed = await placeOrder(market, {
      body: sodaOrder(store.ids, store.storeId, buyer.paymentId),
      endUserId: buyer.endUser,
    });
    const order = orderSchema.parse(placed.order);
    expect(order.status).toBe('pending');
    const row = await platform.orderingDb
      .selectFrom('orders')
      .select(['mode', 'charge_id'])
      .where('order_id', '=', order.orderId)
      .executeTakeFirstOrThrow();
    expect(row.mode).toBe('test');
    const chargeId = row.charge_id!;
    const charge = await platform.paymentsDb
      .selectFrom('charges')
      .select('mode')
      .where('charge_id', '=', chargeId)
      .executeTakeFirstOrThrow();
    expect(charge.mode).toBe('test');
    const atSandbox = () => sandbox.charges().filter((c) => c.reference === chargeId);
    const atLive = () => platform.processor.charges().filter((c) => c.reference === chargeId);
    expect(atSandbox()).toMatchObject([{ capturedAmount: 2_364, refundedAmount: 0 }]);
    expect(atLive()).toEqual([]);

    offsetMs += WINDOW_MS + 1_000;
    await platform.ordering.sweepAcceptance();

    const cancelled = await market.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId: order.orderId } },
    });
    expect(cancelled.data).toMatchObject({ status: 'cancelled', cancelledBy: 'platform' });
    await refundSettled(platform, order.orderId);
    expect(atSandbox()).toMatchObject([{ capturedAmount: 2_364, refundedAmount: 2_364 }]);
    expect(atLive()).toEqual([]);
  });
});
