import {
  fixtureCommercePartnerId,
  sandboxCustomerEndUserId,
  sandboxCustomerPartnerId,
  subjects,
  type Order,
} from '@pcp/contracts';
import { createBusClient, type BusClient, type RequestContext } from '@pcp/service-kit';
import { sql, type RawBuilder } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { refundSettled } from './orders.js';
import { seedPlacedOrder } from './seed-order.js';
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

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

/**
 * A store of `owner`, open all day with no minimum order unless `profile` says otherwise,
 * selling the cart test catalog (ingested): its soda (1.99) is the one item orderable as it is.
 */
async function storeOf(
  owner: RequestContext,
  profile: Record<string, unknown> = {},
): Promise<{ storeId: string; soda: string }> {
  const storeId = randomUUID();
  await bus.request(
    subjects.stores.upsert,
    {
      storeId,
      profile: storeProfile({ availability: alwaysOpen, orderSubmissionUrl: null, ...profile }),
    },
    owner,
  );
  const { document, ids } = cartTestCatalog(storeId);
  const { catalogIngestId } = await bus.request(
    subjects.catalog.notify,
    { storeId, callbackUrl: host.serveJson(`/${randomUUID()}.json`, document) },
    owner,
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = await bus.request(subjects.catalog.status, { storeId, catalogIngestId }, owner);
    if (run.status === 'succeeded') return { storeId, soda: ids.soda };
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
    orderingEnv: {
      ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: '60000',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
    },
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
    const { storeId } = await storeOf(commerce);
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
    const { storeId } = await storeOf(owner);
    await expectAppError(place(tenant('commerce'), storeId), 'STORE_NOT_FOUND');
    await expectAppError(place(tenant('commerce', 'live', owner.partnerId), storeId), 'FORBIDDEN');
    await expectAppError(place(tenant('distribution'), storeId), 'FORBIDDEN');
  });

  it('meets the store minimum order: one more of the item until the subtotal reaches it', async () => {
    const commerce = tenant('commerce');
    // Profile money is in major units (stores keeps minor ones): 5.00 USD, and 15.00 for
    // delivery (storeProfile's delivery settings).
    const { storeId, soda } = await storeOf(commerce, { minimumOrder: 5 });
    const order = await place(commerce, storeId);
    expect(order.cart.lineItems).toEqual([expect.objectContaining({ itemId: soda, quantity: 3 })]);
    expect(order.amounts.subTotal).toBe(5.97);
    expect(order.status).toBe('pending');

    const delivered = await place(commerce, storeId, {
      fulfillmentType: 'DELIVERY_BY_MERCHANT',
      itemCount: 3,
    });
    expect(delivered.cart.lineItems).toEqual([
      expect.objectContaining({ itemId: soda, quantity: 8 }),
    ]);
    expect(delivered.amounts.subTotal).toBe(15.92);
  });

  it('names the minimum order setting when no order within the cart limits meets it', async () => {
    const commerce = tenant('commerce');
    // 999 sodas, the most one line holds, come to 1988.01.
    const { storeId } = await storeOf(commerce, { minimumOrder: 5000 });
    const refused = await expectAppError(place(commerce, storeId), 'ORDER_INVALID');
    expect(refused.message).toMatch(/minimumOrder/);
    expect(refused.message).toMatch(/1988\.01/);
    expect(refused.errors).toEqual([
      { code: 'MINIMUM_NOT_MET', pointer: '/cart', message: expect.stringMatching(/minimumOrder/) },
    ]);

    const delivery = await storeOf(commerce, {
      delivery: { radiusMeters: 5000, fee: 2.99, minimumOrder: 2500, etaMinutes: 40 },
    });
    expect((await place(commerce, delivery.storeId)).status).toBe('pending');
    const delivering = await expectAppError(
      place(commerce, delivery.storeId, { fulfillmentType: 'DELIVERY_BY_MERCHANT' }),
      'ORDER_INVALID',
    );
    expect(delivering.message).toMatch(/delivery\.minimumOrder/);
    expect(delivering.errors).toEqual([expect.objectContaining({ code: 'MINIMUM_NOT_MET' })]);
  });

  it('names the setting of a store that takes no order now: its hours, its status, its fulfillment types', async () => {
    const commerce = tenant('commerce');
    const closed = await storeOf(commerce, { availability: [] });
    const outside = await expectAppError(place(commerce, closed.storeId), 'ORDER_INVALID');
    expect(outside.message).toMatch(/availability/);
    expect(outside.errors).toEqual([expect.objectContaining({ code: 'STORE_CLOSED' })]);

    const paused = await storeOf(commerce);
    await bus.request(
      subjects.stores.setStatus,
      { storeId: paused.storeId, change: { status: 'paused', reason: 'too_busy' } },
      commerce,
    );
    const notTaking = await expectAppError(place(commerce, paused.storeId), 'ORDER_INVALID');
    expect(notTaking.message).toMatch(/status/);
    expect(notTaking.errors).toEqual([expect.objectContaining({ code: 'STORE_CLOSED' })]);

    const pickupOnly = await storeOf(commerce, { fulfillmentTypes: ['PICKUP'], delivery: null });
    const noDelivery = await expectAppError(
      place(commerce, pickupOnly.storeId, { fulfillmentType: 'DELIVERY_BY_MERCHANT' }),
      'ORDER_INVALID',
    );
    expect(noDelivery.message).toMatch(/fulfillmentTypes/);
    expect(noDelivery.errors).toContainEqual(
      expect.objectContaining({ code: 'DELIVERY_UNAVAILABLE', pointer: '/fulfillment/mode' }),
    );
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
    ({ storeId } = await storeOf(commerce));
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
    await refundSettled(platform, order.orderId ?? '');
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
    await refundSettled(platform, orderId);
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

/** The rows of one tenant, by the ids of what it made, read before a reset deletes them. */
interface Owned {
  partnerId: string;
  /** The end user the sandbox customer orders as for the tenant. */
  customer: string;
  storeIds: string[];
  runIds: string[];
  versionIds: string[];
  orderIds: string[];
  deliveryIds: string[];
  chargeIds: string[];
  storeEventIds: string[];
}

/** The id lists of `Owned`. */
type IdList = { [K in keyof Owned]: Owned[K] extends string[] ? K : never }[keyof Owned];
type Schema = 'stores' | 'catalog' | 'ordering' | 'payments' | 'gateway';
/** Which rows of a table are the tenant's: a condition on the table's own columns. */
type Rows = (owner: Owned) => RawBuilder<boolean>;

const byPartner: Rows = (o) => sql`partner_id = ${o.partnerId}`;
const among =
  (name: string, key: IdList): Rows =>
  (o) =>
    sql`${sql.ref(name)}::text = any(${o[key]}::text[])`;
/** Rows the tenant made itself, or the sandbox customer made for it. */
const byPartnerOrCustomer = (o: Pick<Owned, 'partnerId' | 'customer'>) =>
  sql<boolean>`(partner_id = ${o.partnerId}
    or (partner_id = ${sandboxCustomerPartnerId} and end_user_id = ${o.customer}))`;

/**
 * Every table of every service schema: the tenant's rows of it (`rows`), or why none are.
 * A reset must delete a tenant's rows of each table but those it `keeps`, and no other row;
 * the test fails when a table is added without saying which of its rows are whose.
 */
const tables: Record<Schema, Record<string, { rows: Rows; keeps?: string } | { none: string }>> = {
  stores: {
    stores: { rows: byPartner },
    item_availability_overrides: { rows: among('store_id', 'storeIds') },
    outbox: { rows: among('aggregate_id', 'storeIds') },
    fixture_store_events: { none: 'the fixture stores’ schedule, the platform’s' },
    deleted_store_versions: {
      none: 'the versions a deleted store id goes on from, whoever creates it next: the reset writes them',
    },
  },
  catalog: {
    ingest_runs: { rows: byPartner },
    catalog_versions: { rows: among('version_id', 'versionIds') },
    catalog_document_chunks: { rows: among('version_id', 'versionIds') },
    active_catalogs: { rows: among('version_id', 'versionIds') },
    ingest_partner_turns: { rows: byPartner },
    outbox: { rows: among('aggregate_id', 'storeIds') },
  },
  ordering: {
    orders: { rows: among('order_id', 'orderIds') },
    order_status_changes: { rows: among('order_id', 'orderIds') },
    order_refunds: { rows: among('order_id', 'orderIds') },
    outbox: { rows: among('aggregate_id', 'orderIds') },
    place_attempts: {
      rows: (o) => sql`(${byPartnerOrCustomer(o)} or ${among('order_id', 'orderIds')(o)})`,
    },
    addresses: { rows: byPartnerOrCustomer },
    store_acceptance_timeouts: { rows: (o) => sql`store_partner_id = ${o.partnerId}` },
    webhook_endpoints: { rows: byPartner },
    webhook_deliveries: {
      rows: (o) => sql`(${byPartner(o)} or ${among('order_id', 'orderIds')(o)})`,
    },
    webhook_delivery_attempts: { rows: among('delivery_id', 'deliveryIds') },
    webhook_store_events: { rows: among('event_id', 'storeEventIds') },
    webhook_streams: {
      rows: byPartner,
      keeps: 'a pcp listen open across a reset keeps receiving, signed with the same secret',
    },
    webhook_stream_events: { rows: byPartner },
  },
  payments: {
    cards: { rows: byPartnerOrCustomer },
    charges: { rows: among('charge_id', 'chargeIds') },
    refunds: { rows: among('charge_id', 'chargeIds') },
    reconciler_actions: { rows: among('charge_id', 'chargeIds') },
    velocity_events: {
      rows: (o) =>
        sql`(subject like ${`${o.partnerId}/%`}
            or subject = ${`${sandboxCustomerPartnerId}/${o.customer}`})`,
    },
    reconciler_lease: { none: 'the reconciler’s lease, the service’s' },
  },
  gateway: {
    partners: { none: 'the partner itself, the operator’s (the admin command)' },
    api_keys: { none: 'the partner’s keys, the operator’s' },
    console_sessions: { none: 'the partner’s console sign-ins, access like its keys: kept' },
    request_log: { none: 'the record of the partner’s calls, the reset among them: kept' },
    request_log_tenant_rows: { none: 'how many rows of the request log are the partner’s: kept' },
  },
};

describe('reset', () => {
  const databases = () => ({
    stores: platform.storesDb,
    catalog: platform.catalogDb,
    ordering: platform.orderingDb,
    payments: platform.paymentsDb,
    gateway: platform.gatewayDb,
  });
  /** The schema's own tables, without the migrator's. */
  async function tablesOf(schema: Schema): Promise<string[]> {
    const { rows } = await sql<{ name: string }>`select table_name as name
      from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'
        and table_name not like 'kysely_migration%'`.execute(databases()[schema]);
    return rows.map((row) => row.name).sort();
  }

  /** The ids of what `partnerId` made, to find its rows again after a reset. */
  async function ownedBy(partnerId: string): Promise<Owned> {
    const { storesDb, catalogDb, orderingDb, paymentsDb } = platform;
    const customer = sandboxCustomerEndUserId(partnerId);
    const ids = async (
      db: Parameters<RawBuilder<unknown>['execute']>[0],
      query: RawBuilder<{ id: string }>,
    ) => (await query.execute(db)).rows.map((row) => row.id);
    // Its own orders: another partner's order at its store is that partner's
    // (sandbox-reset-tenants.e2e.test.ts).
    const orderIds = await ids(
      orderingDb,
      sql`select order_id as id from orders where ${byPartnerOrCustomer({ partnerId, customer })}`,
    );
    const runIds = await ids(
      catalogDb,
      sql`select run_id as id from ingest_runs where partner_id = ${partnerId}`,
    );
    return {
      partnerId,
      customer,
      storeIds: await ids(
        storesDb,
        sql`select store_id as id from stores where partner_id = ${partnerId}`,
      ),
      runIds,
      versionIds: await ids(
        catalogDb,
        sql`select version_id as id from catalog_versions where run_id::text = any(${runIds}::text[])`,
      ),
      orderIds,
      deliveryIds: await ids(
        orderingDb,
        sql`select delivery_id as id from webhook_deliveries
          where partner_id = ${partnerId} or order_id::text = any(${orderIds}::text[])`,
      ),
      chargeIds: await ids(
        paymentsDb,
        sql`select charge_id as id from charges where ${byPartnerOrCustomer({ partnerId, customer })}`,
      ),
      storeEventIds: await ids(
        orderingDb,
        sql`select event_id as id from webhook_deliveries join webhook_store_events using (event_id)
          where webhook_deliveries.partner_id = ${partnerId}`,
      ),
    };
  }

  /** The owner's rows of every table that holds any, keyed `<schema>.<table>`. */
  async function rowsOf(owner: Owned): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const [schema, byTable] of Object.entries(tables) as [Schema, (typeof tables)[Schema]][]) {
      for (const [table, ownership] of Object.entries(byTable)) {
        if (!('rows' in ownership)) continue;
        const { rows } = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}
          where ${ownership.rows(owner)}`.execute(databases()[schema]);
        counts[`${schema}.${table}`] = Number(rows[0]!.n);
      }
    }
    return counts;
  }

  const isKept = (name: string) => {
    const [schema, table] = name.split('.') as [Schema, string];
    return 'keeps' in tables[schema][table]!;
  };
  /** After a reset: the rows a reset keeps, none of the others. */
  const kept = (counts: Record<string, number>) =>
    Object.fromEntries(Object.entries(counts).map(([name, n]) => [name, isKept(name) ? n : 0]));
  /** What a reset reports of the tenant's rows: every table's count but those it keeps. */
  const deletable = (counts: Record<string, number>) =>
    Object.fromEntries(Object.entries(counts).filter(([name]) => !isKept(name)));

  async function resetAll(who: RequestContext) {
    const parts = await Promise.all([
      bus.request(subjects.stores.testReset, {}, who),
      bus.request(subjects.catalog.testReset, {}, who),
      bus.request(subjects.ordering.testReset, {}, who),
      bus.request(subjects.payments.testReset, {}, who),
    ]);
    return Object.assign({}, ...parts.map((part) => part.deleted)) as Record<string, number>;
  }

  /** A test distribution tenant with an address, a card, an endpoint, a stream and an order. */
  /** With `retried`, its order's delivery fails its first try (a try the next one supersedes). */
  async function distributionTenant(receiver: WebhookReceiver, retried = false) {
    const who = {
      ...tenant('distribution'),
      endUserId: `diner-${randomUUID()}`,
      paymentTypes: ['CARD' as const],
    };
    await bus.request(
      subjects.ordering.saveAddress,
      { address1: '401 N Wabash Ave', city: 'Chicago', state: 'IL', postalCode: '60611' },
      who,
    );
    await bus.request(
      subjects.payments.vaultCard,
      {
        cardNumber: '4242424242424242',
        expMonth: 12,
        expYear: 2035,
        cvc: '123',
        cardholderName: 'Pat Doe',
      },
      who,
    );
    await bus.request(
      subjects.ordering.putWebhook,
      { url: receiver.url, events: ['order.created', 'order.status_changed'] },
      who,
    );
    await bus.request(subjects.ordering.openWebhookStream, {}, who);
    const answer = receiver.answer;
    if (retried) {
      const firstOfItsOrder = (request: ReceivedWebhook) =>
        receiver.received.filter(
          (one) => one.payload.data?.orderId === request.payload.data?.orderId,
        ).length === 1;
      receiver.answer = (request, index) =>
        firstOfItsOrder(request) ? { status: 503 } : answer(request, index);
    }
    // At a store of nobody here (not a fixture store: its kitchen would move the order on).
    const orderId = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: randomUUID(),
      storePartner: { partnerId: randomUUID() },
      placer: who,
    });
    // Recorded for its endpoint and its stream once the outbox relay published it.
    await receiver.waitFor(
      retried ? 2 : 1,
      (request) => request.payload.data?.orderId === orderId,
      15_000,
    );
    receiver.answer = answer;
    return who;
  }

  it('covers every table of every service schema', async () => {
    for (const schema of Object.keys(tables) as Schema[]) {
      expect(Object.keys(tables[schema]).sort(), schema).toEqual(await tablesOf(schema));
    }
  });

  it('deletes every row of the calling test tenant, table by table, and nothing of another tenant', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const a = tenant('commerce');
      const b = tenant('commerce');
      const live = tenant('commerce', 'live');
      const { storeId: storeA, soda } = await storeOf(a);
      const { storeId: storeB } = await storeOf(b);
      await storeOf(live);
      const orderA = await place(a, storeA, { paymentType: 'CARD' });
      await advance(a, orderA.orderId ?? '', 'cancelled');
      await refundSettled(platform, orderA.orderId ?? '');
      await advance(a, (await place(a, storeA)).orderId ?? '', 'timeout');
      await place(b, storeB, { paymentType: 'CARD' });
      // After A's orders: the soda is the one item they could order.
      await bus.request(
        subjects.stores.setItemAvailability,
        { storeId: storeA, items: [{ itemId: soda, available: false }] },
        a,
      );
      // (Its retry comes after the schedule's 5 s.)
      const d = await distributionTenant(receiver, true);
      const e = await distributionTenant(receiver);

      const owners = {
        a: await ownedBy(a.partnerId),
        b: await ownedBy(b.partnerId),
        d: await ownedBy(d.partnerId),
        e: await ownedBy(e.partnerId),
        live: await ownedBy(live.partnerId),
      };
      const before = {
        a: await rowsOf(owners.a),
        b: await rowsOf(owners.b),
        d: await rowsOf(owners.d),
        e: await rowsOf(owners.e),
        live: await rowsOf(owners.live),
      };
      // What the two tenants reset made, between them, reaches every table a tenant has rows of
      // (but the store events a store's change fans out, which these never made, and what the
      // reconciler does on its own, which a healthy platform never needs).
      const made = Object.keys(before.a).filter(
        (name) => before.a[name]! > 0 || before.d[name]! > 0,
      );
      const unmade = ['ordering.webhook_store_events', 'payments.reconciler_actions'];
      expect(made.sort()).toEqual(
        Object.keys(before.a)
          .filter((name) => !unmade.includes(name))
          .sort(),
      );

      await expectAppError(
        bus.request(subjects.ordering.testReset, {}, { ...a, mode: 'live' }),
        'FORBIDDEN',
      );
      const deletedA = await resetAll(a);
      const deletedD = await resetAll(d);
      // Counted per table: each one the tenant had rows of, but the one kept, all of them.
      expect(deletedA).toEqual(deletable(before.a));
      expect(deletedD).toEqual(deletable(before.d));
      expect(await rowsOf(owners.a)).toEqual(kept(before.a));
      expect(await rowsOf(owners.d)).toEqual(kept(before.d));
      expect(before.d['ordering.webhook_streams']).toBe(1);
      for (const other of ['b', 'e', 'live'] as const) {
        expect(await rowsOf(owners[other]), other).toEqual(before[other]);
      }
      // B's store still takes orders, and a second reset finds nothing of A.
      expect((await place(b, storeB)).status).toBe('pending');
      const again = await resetAll(a);
      expect(Object.values(again).every((n) => n === 0)).toBe(true);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
