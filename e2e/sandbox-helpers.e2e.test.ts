import {
  fixtureCommercePartnerId,
  sandboxCustomerPartnerId,
  subjects,
  type Order,
} from '@pcp/contracts';
import { createBusClient, type BusClient, type RequestContext } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { seedPlacedOrder } from './seed-order.js';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let bus: BusClient;

/** A tenant's request context, as the gateway forwards a key of that mode. */
const tenant = (
  kind: 'commerce' | 'distribution',
  mode: 'live' | 'test' = 'test',
  partnerId: string = randomUUID(),
): RequestContext & { partnerId: string } => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: kind,
  mode,
});

/** A store of `owner`, open all day, selling the cart test catalog (ingested). */
async function storeOf(owner: RequestContext): Promise<string> {
  const storeId = randomUUID();
  await bus.request(
    subjects.stores.upsert,
    {
      storeId,
      profile: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: null }),
    },
    owner,
  );
  const { document } = cartTestCatalog(storeId);
  const { catalogIngestId } = await bus.request(
    subjects.catalog.notify,
    { storeId, callbackUrl: host.serveJson(`/${randomUUID()}.json`, document) },
    owner,
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = await bus.request(subjects.catalog.status, { storeId, catalogIngestId }, owner);
    if (run.status === 'succeeded') return storeId;
    if (run.status === 'failed' || Date.now() > deadline) throw new Error(`ingest ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const place = (owner: RequestContext, storeId: string, body: Record<string, unknown> = {}) =>
  bus.request(subjects.ordering.testPlaceStoreOrder, { storeId, ...body }, owner);

const advance = (who: RequestContext, orderId: string, to: string) =>
  bus.request(subjects.ordering.testAdvanceOrder, { orderId, to } as never, who);

/** The order's events in ordering's outbox, in version order. */
async function eventsOf(orderId: string) {
  const rows = await platform.orderingDb
    .selectFrom('outbox')
    .select(['aggregate_version', 'payload'])
    .where('aggregate_type', '=', 'order')
    .where('aggregate_id', '=', orderId)
    .orderBy('aggregate_version')
    .execute();
  return rows.map((row) => {
    const data = row.payload.data as { event: string; status: string };
    return `${row.aggregate_version}:${data.event}:${data.status}`;
  });
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    orderingEnv: { ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '60000' },
  });
  host = await startCatalogHost();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 15_000, logger: env.logger });
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

describe('place at the own store', () => {
  it('places the first orderable item as the sandbox customer, through the real place', async () => {
    const commerce = tenant('commerce');
    const storeId = await storeOf(commerce);
    const order = await place(commerce, storeId);
    expect(order).toMatchObject({ storeId, state: 'open', status: 'pending' });
    expect(order.paymentType).toBe('PAY_AT_STORE');
    expect(order.cart.lineItems).toHaveLength(1);
    expect(order.acceptBy).not.toBeNull();
    const row = await platform.orderingDb
      .selectFrom('orders')
      .select(['partner_id', 'store_partner_id'])
      .where('order_id', '=', order.orderId ?? '')
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      partner_id: sandboxCustomerPartnerId,
      store_partner_id: commerce.partnerId,
    });
    expect(await eventsOf(order.orderId ?? '')).toEqual(['1:order.created:pending']);

    const card = await place(commerce, storeId, { paymentType: 'CARD' });
    expect(card.payment).toMatchObject({ last4: '4242' });
  });

  it('is STORE_NOT_FOUND at another partner store and FORBIDDEN for a live key or a distribution partner', async () => {
    const owner = tenant('commerce');
    const storeId = await storeOf(owner);
    await expectAppError(place(tenant('commerce'), storeId), 'STORE_NOT_FOUND');
    await expectAppError(place(tenant('commerce', 'live', owner.partnerId), storeId), 'FORBIDDEN');
    await expectAppError(place(tenant('distribution'), storeId), 'FORBIDDEN');
  });

  it('says so when the store has no active catalog', async () => {
    const commerce = tenant('commerce');
    const storeId = randomUUID();
    await bus.request(
      subjects.stores.upsert,
      { storeId, profile: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: null }) },
      commerce,
    );
    await expectAppError(place(commerce, storeId), 'CATALOGSET_NOT_FOUND');
  });
});

describe('advance', () => {
  let commerce: ReturnType<typeof tenant>;
  let storeId: string;
  beforeAll(async () => {
    commerce = tenant('commerce');
    storeId = await storeOf(commerce);
  });

  it('walks a pickup order to completed one step at a time, each step an event', async () => {
    const placed = await place(commerce, storeId);
    const orderId = placed.orderId ?? '';
    const completed: Order = await advance(commerce, orderId, 'completed');
    expect(completed).toMatchObject({ state: 'completed', status: 'completed', version: 5 });
    expect(await eventsOf(orderId)).toEqual([
      '1:order.created:pending',
      '2:order.status_changed:confirmed',
      '3:order.status_changed:preparing',
      '4:order.status_changed:ready',
      '5:order.status_changed:completed',
    ]);
    await expectAppError(
      advance(commerce, orderId, 'preparing'),
      'ORDER_STATUS_TRANSITION_INVALID',
    );
  });

  it('refuses a pickup order in transit and a step back', async () => {
    const orderId = (await place(commerce, storeId)).orderId ?? '';
    await expectAppError(
      advance(commerce, orderId, 'inTransit'),
      'ORDER_STATUS_TRANSITION_INVALID',
    );
    expect((await advance(commerce, orderId, 'preparing')).status).toBe('preparing');
    await expectAppError(
      advance(commerce, orderId, 'confirmed'),
      'ORDER_STATUS_TRANSITION_INVALID',
    );
    await expectAppError(advance(commerce, orderId, 'timeout'), 'ORDER_STATUS_TRANSITION_INVALID');
  });

  it('cancels with the helper reason and refunds a card order', async () => {
    const order = await place(commerce, storeId, { paymentType: 'CARD' });
    const cancelled = await advance(commerce, order.orderId ?? '', 'cancelled');
    expect(cancelled).toMatchObject({
      state: 'cancelled',
      cancelledBy: 'store',
      cancelReason: "Cancelled with the sandbox's advance helper",
    });
    const refunds = await platform.paymentsDb
      .selectFrom('refunds')
      .innerJoin('charges', 'charges.charge_id', 'refunds.charge_id')
      .select(['refunds.amount'])
      .where('charges.order_id', '=', order.orderId ?? '')
      .execute();
    expect(refunds).toEqual([{ amount: Math.round(order.amounts.total * 100) }]);
  });

  it('times a pending card order out as the platform does: cancelled by the platform, refunded once', async () => {
    const order = await place(commerce, storeId, { paymentType: 'CARD' });
    const orderId = order.orderId ?? '';
    const timedOut = await advance(commerce, orderId, 'timeout');
    expect(timedOut).toMatchObject({
      state: 'cancelled',
      cancelledBy: 'platform',
      cancelReason: 'not accepted in time',
    });
    await expectAppError(advance(commerce, orderId, 'timeout'), 'ORDER_STATUS_TRANSITION_INVALID');
    expect(await platform.ordering.sweepAcceptance()).toMatchObject({ cancelled: 0 });
    const charge = await platform.paymentsDb
      .selectFrom('charges')
      .select(['refunded_amount', 'captured_amount'])
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    expect(charge.refunded_amount).toBe(charge.captured_amount);
    const refunds = await platform.paymentsDb
      .selectFrom('refunds')
      .innerJoin('charges', 'charges.charge_id', 'refunds.charge_id')
      .select('refunds.refund_id')
      .where('charges.order_id', '=', orderId)
      .execute();
    expect(refunds).toHaveLength(1);
    expect(await eventsOf(orderId)).toEqual([
      '1:order.created:pending',
      '2:order.cancelled:cancelled',
    ]);
  });

  it('lets a distribution partner advance its own order at a fixture store, and nobody else', async () => {
    const placer = tenant('distribution');
    const fixtureOrder = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: randomUUID(),
      storePartner: { partnerId: fixtureCommercePartnerId },
      placer,
    });
    expect((await advance(placer, fixtureOrder, 'confirmed')).status).toBe('confirmed');
    // Another tenant, the same tenant's live mode, and an order at a partner's (not fixture) store.
    await expectAppError(
      advance(tenant('distribution'), fixtureOrder, 'preparing'),
      'ORDER_NOT_FOUND',
    );
    await expectAppError(
      advance(tenant('distribution', 'live', placer.partnerId), fixtureOrder, 'preparing'),
      'FORBIDDEN',
    );
    const elsewhere = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer,
    });
    await expectAppError(advance(placer, elsewhere, 'confirmed'), 'ORDER_NOT_FOUND');
    await expectAppError(advance(tenant('commerce'), elsewhere, 'confirmed'), 'ORDER_NOT_FOUND');
    await expectAppError(advance(placer, randomUUID(), 'confirmed'), 'ORDER_NOT_FOUND');
  });
});

describe('reset', () => {
  /** Rows of each partner-keyed table that belong to `partnerId` (or its sandbox customer). */
  async function rowsOf(partnerId: string) {
    const count = async (query: {
      executeTakeFirstOrThrow(): Promise<{ n: string | number | bigint }>;
    }) => Number((await query.executeTakeFirstOrThrow()).n);
    const { storesDb, catalogDb, orderingDb, paymentsDb } = platform;
    return {
      stores: await count(
        storesDb
          .selectFrom('stores')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('partner_id', '=', partnerId),
      ),
      runs: await count(
        catalogDb
          .selectFrom('ingest_runs')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('partner_id', '=', partnerId),
      ),
      versions: await count(
        catalogDb
          .selectFrom('catalog_versions')
          .innerJoin('ingest_runs', 'ingest_runs.run_id', 'catalog_versions.run_id')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('ingest_runs.partner_id', '=', partnerId),
      ),
      orders: await count(
        orderingDb
          .selectFrom('orders')
          .select((eb) => eb.fn.countAll().as('n'))
          .where((eb) =>
            eb.or([eb('partner_id', '=', partnerId), eb('store_partner_id', '=', partnerId)]),
          ),
      ),
      charges: await count(
        paymentsDb
          .selectFrom('charges')
          .select((eb) => eb.fn.countAll().as('n'))
          .where((eb) =>
            eb.or([
              eb('partner_id', '=', partnerId),
              eb('end_user_id', '=', `sandbox-customer-${partnerId}`),
            ]),
          ),
      ),
    };
  }

  async function resetAll(who: RequestContext) {
    const parts = await Promise.all([
      bus.request(subjects.stores.testReset, {}, who),
      bus.request(subjects.catalog.testReset, {}, who),
      bus.request(subjects.ordering.testReset, {}, who),
      bus.request(subjects.payments.testReset, {}, who),
    ]);
    return Object.assign({}, ...parts.map((part) => part.deleted)) as Record<string, number>;
  }

  it('deletes every row of the calling test tenant and nothing of another tenant', async () => {
    const a = tenant('commerce');
    const b = tenant('commerce');
    const live = tenant('commerce', 'live');
    const storeA = await storeOf(a);
    const storeB = await storeOf(b);
    await storeOf(live);
    const orderA = await place(a, storeA, { paymentType: 'CARD' });
    await advance(a, orderA.orderId ?? '', 'cancelled');
    await place(a, storeA);
    await place(b, storeB, { paymentType: 'CARD' });
    const before = {
      a: await rowsOf(a.partnerId),
      b: await rowsOf(b.partnerId),
      live: await rowsOf(live.partnerId),
    };
    expect(before.a).toEqual({ stores: 1, runs: 1, versions: 1, orders: 2, charges: 1 });

    await expectAppError(
      bus.request(subjects.ordering.testReset, {}, { ...a, mode: 'live' }),
      'FORBIDDEN',
    );
    const deleted = await resetAll(a);
    expect(deleted).toMatchObject({
      'stores.stores': 1,
      'catalog.ingest_runs': 1,
      'catalog.catalog_versions': 1,
      'catalog.active_catalogs': 1,
      'ordering.orders': 2,
      'ordering.place_attempts': 2,
      'payments.charges': 1,
      'payments.refunds': 1,
      'payments.cards': 1,
    });
    // Order a: created, cancelled; order b: created.
    expect(deleted['ordering.outbox']).toBe(3);
    expect(await rowsOf(a.partnerId)).toEqual({
      stores: 0,
      runs: 0,
      versions: 0,
      orders: 0,
      charges: 0,
    });
    expect(await rowsOf(b.partnerId)).toEqual(before.b);
    expect(await rowsOf(live.partnerId)).toEqual(before.live);
    // B's store still takes orders, and a second reset finds nothing of A.
    expect((await place(b, storeB)).status).toBe('pending');
    const again = await resetAll(a);
    expect(Object.values(again).every((n) => n === 0)).toBe(true);
  });
});
