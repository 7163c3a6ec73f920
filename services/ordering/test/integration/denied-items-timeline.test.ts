import { subjects, type OrderTimeline } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  handle,
  loadConfig,
  serveSubjects,
  type BusClient,
  type RequestContext,
  type ServedService,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  createOrderingService,
  insertOrder,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderDetails,
  type OrderingDatabase,
} from '../../src/app.js';

// A store's denial keeps the items that ran out with the cancel's row of the order's status
// history, and the order's timeline shows them (docs/guide/orders.md#an-orders-timeline).
// Stores stands in as a responder on real NATS: it takes the items, as the real one would.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
let ordering: ReturnType<typeof createOrderingService>;
let stores: ServedService;
/** The item ids each denyItems request carried, in order. */
const denied: string[][] = [];

const storePartnerId = randomUUID();
const placerId = randomUUID();
const storeId = randomUUID();
const [fries, soda] = [randomUUID(), randomUUID()];

const context = (partnerId: string, kind: 'commerce' | 'distribution'): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: kind,
  mode: 'live',
});

/** A pending pay-at-store order of the store (no charge: its cancel refunds nothing). */
async function pendingOrder(): Promise<string> {
  const orderId = randomUUID();
  const now = new Date();
  const details: OrderDetails = {
    amounts: {
      currency: 'USD',
      subTotal: 19.9,
      fees: 0,
      feesBreakdown: [],
      promotions: 0,
      taxes: 0,
      taxesBreakdown: [],
      adjustments: 0,
      tip: 0,
      total: 19.9,
    },
    cart: {
      catalogSetId: randomUUID(),
      storeId,
      currency: 'USD',
      lineItems: [fries, soda].map((itemId) => ({
        itemId,
        lineItemId: randomUUID(),
        quantity: 5,
        name: itemId === fries ? 'Fries' : 'Soda',
        unitPrice: 1.99,
        totalPrice: 9.95,
        modifierGroups: [],
      })),
      subTotal: 19.9,
      itemCount: 10,
      errors: [],
    },
    fulfillment: {
      mode: 'PICKUP',
      scheduleType: 'ASAP',
      scheduledTime: null,
      address: null,
      deliveryType: null,
      instructions: null,
    },
    client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
    customer: null,
    paymentType: 'PAY_AT_STORE',
    payment: null,
    specialInstructions: null,
  };
  await db.transaction().execute((trx) =>
    insertOrder(
      trx,
      {
        order_id: orderId,
        partner_id: placerId,
        end_user_id: 'diner-1',
        store_id: storeId,
        store_partner_id: storePartnerId,
        mode: 'live',
        fulfillment_mode: 'PICKUP',
        state: 'open',
        status: 'pending',
        version: 1,
        details,
        charge_id: null,
        total_minor: 1_990,
        currency: 'USD',
        estimated_ready_at: null,
        cancel_reason: null,
        cancelled_by: null,
        store_deleted_at: null,
        accept_by: new Date(now.getTime() + 600_000),
        created_at: now,
        updated_at: now,
      },
      env.prefix,
    ),
  );
  return orderId;
}

const cancel = (orderId: string, change: { cancelReason: string; unavailableItemIds?: string[] }) =>
  bus.request(
    subjects.ordering.changeOrderStatus,
    { orderId, change: { state: 'cancelled', ...change } },
    context(storePartnerId, 'commerce'),
  );

const storeSteps = async (orderId: string) => {
  const timeline: OrderTimeline = await bus.request(
    subjects.ordering.orderTimeline,
    { orderId },
    context(placerId, 'distribution'),
  );
  return timeline.events.filter((event) => event.kind === 'store');
};

const historyOf = (orderId: string) =>
  db
    .selectFrom('order_status_changes')
    .select(['version', 'status', 'unavailable_item_ids'])
    .where('order_id', '=', orderId)
    .orderBy('version')
    .execute();

beforeAll(async () => {
  env = await createTestEnvironment();
  const options = { version: '0.0.1', prefix: env.prefix, timeoutMs: 5_000, logger: env.logger };
  stores = await serveSubjects(env.nc, { ...options, service: 'stores' }, [
    handle(subjects.stores.denyItems, async ({ itemIds }) => {
      denied.push(itemIds);
      return {
        version: denied.length,
        items: itemIds.map((itemId) => ({ itemId, available: false as const, until: null })),
      };
    }),
  ]);
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-denied-items',
  });
  ordering = createOrderingService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('ordering'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 5_000,
    db,
    config: loadConfig(orderingEnvSchema, {}),
  });
  await ordering.start();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterAll(async () => {
  await ordering?.stop(5_000);
  await stores?.stop(5_000);
  await db?.destroy();
  await env?.cleanup();
});

describe('a denial with the items that ran out', () => {
  it('keeps them with the cancel in the history, and the timeline shows them', async () => {
    const orderId = await pendingOrder();
    const order = await cancel(orderId, {
      cancelReason: 'Out of fries and soda',
      unavailableItemIds: [fries, soda],
    });
    expect(order).toMatchObject({ status: 'cancelled', cancelledBy: 'store', version: 2 });
    expect(denied.at(-1)).toEqual([fries, soda]);

    expect(await historyOf(orderId)).toEqual([
      { version: 1, status: 'pending', unavailable_item_ids: null },
      { version: 2, status: 'cancelled', unavailable_item_ids: [fries, soda] },
    ]);
    expect(await storeSteps(orderId)).toEqual([
      {
        at: order.updatedAt,
        kind: 'store',
        action: 'denied',
        reason: 'Out of fries and soda',
        unavailableItemIds: [fries, soda],
      },
    ]);
  });

  it('keeps none for a denial without items, nor for an accept', async () => {
    const deniedBefore = denied.length;
    const plain = await pendingOrder();
    await cancel(plain, { cancelReason: 'The kitchen closed early' });
    expect(denied).toHaveLength(deniedBefore);
    expect((await historyOf(plain)).map((row) => row.unavailable_item_ids)).toEqual([null, null]);
    expect(await storeSteps(plain)).toEqual([
      expect.objectContaining({ action: 'denied', unavailableItemIds: [] }),
    ]);

    const accepted = await pendingOrder();
    await bus.request(
      subjects.ordering.changeOrderStatus,
      { orderId: accepted, change: { status: 'confirmed' } },
      context(storePartnerId, 'commerce'),
    );
    expect(await storeSteps(accepted)).toEqual([
      expect.objectContaining({ action: 'accepted', reason: null, unavailableItemIds: [] }),
    ]);
    expect((await historyOf(accepted)).map((row) => row.unavailable_item_ids)).toEqual([
      null,
      null,
    ]);
  });
});
