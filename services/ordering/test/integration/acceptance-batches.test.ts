import { createBusClient, createDatabase, type BusClient } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { insertOrder, ORDERING_SCHEMA, type OrderingDatabase } from '../../src/app.js';
import type { OrderDetails, OrderRow } from '../../src/db/ordering.table.js';
import { createAcceptanceSweeper } from '../../src/lifecycle/acceptance-sweeper.js';
import { writeOrderMove } from '../../src/lifecycle/order-move.js';
import { lockStoreOrder } from '../../src/lifecycle/order.repository.js';

/**
 * The acceptance sweeper cancels due orders in batches (a transaction per batch): each order
 * still gets its own version, history row, outbox event and owed refund, exactly once, however
 * many sweepers run, and a store's confirm holding an order's lock keeps that order.
 */

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-acceptance-batches',
  });
  // No stores service answers: a pause the runs make due is asked and fails fast.
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 1_000, logger: env.logger });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

const TOTAL_MINOR = 2_364;
const storePartnerId = randomUUID();

function sweeper() {
  return createAcceptanceSweeper({
    db,
    bus,
    clock: () => new Date(),
    prefix: env.prefix,
    logger: env.logger,
    registry: new Registry(),
    nudge: () => undefined,
    nudgeRefunds: () => undefined,
  });
}

/** A pending order of `storeId` as place leaves it, due `dueInMs` from now (past: negative). */
async function seedPending(
  storeId: string,
  dueInMs: number,
  paymentType: 'CARD' | 'PAY_AT_STORE' = 'CARD',
): Promise<string> {
  const now = new Date();
  const row: OrderRow = {
    order_id: randomUUID(),
    partner_id: randomUUID(),
    end_user_id: 'diner',
    store_id: storeId,
    store_partner_id: storePartnerId,
    mode: 'live',
    fulfillment_mode: 'PICKUP',
    state: 'open',
    status: 'pending',
    version: 1,
    details: { paymentType } as OrderDetails,
    charge_id: paymentType === 'CARD' ? randomUUID() : null,
    total_minor: TOTAL_MINOR,
    currency: 'USD',
    estimated_ready_at: null,
    accept_by: new Date(now.getTime() + dueInMs),
    cancel_reason: null,
    cancelled_by: null,
    store_deleted_at: null,
    created_at: now,
    updated_at: now,
  };
  await db.transaction().execute((trx) => insertOrder(trx, row, env.prefix));
  return row.order_id;
}

/** Each order's row, history versions, outbox versions and refunds. */
async function written(orderIds: string[]) {
  const [orders, changes, outbox, refunds] = await Promise.all([
    db.selectFrom('orders').selectAll().where('order_id', 'in', orderIds).execute(),
    db
      .selectFrom('order_status_changes')
      .select(['order_id', 'version', 'status', 'previous_status', 'cancelled_by'])
      .where('order_id', 'in', orderIds)
      .where('version', '>', 1)
      .execute(),
    db
      .selectFrom('outbox')
      .select(['aggregate_id', 'aggregate_version', 'payload'])
      .where('aggregate_id', 'in', orderIds)
      .where('aggregate_version', '>', 1)
      .execute(),
    db.selectFrom('order_refunds').selectAll().where('order_id', 'in', orderIds).execute(),
  ]);
  return { orders, changes, outbox, refunds };
}

const sameIds = (ids: string[]) => expect.arrayContaining(ids) as unknown;

describe('the acceptance sweeper, in batches', () => {
  it('cancels every due order in one sweep: a version, a history row, an event and a refund each', async () => {
    // More than a sweep once took (200), of a few stores, some paid at the store.
    const stores = Array.from({ length: 5 }, () => randomUUID());
    const card: string[] = [];
    const cash: string[] = [];
    for (let i = 0; i < 250; i++) {
      const paid = i % 10 === 0 ? 'PAY_AT_STORE' : 'CARD';
      (paid === 'CARD' ? card : cash).push(await seedPending(stores[i % 5]!, -1_000, paid));
    }
    const notDue = await seedPending(stores[0]!, 60_000);
    const due = [...card, ...cash];

    const result = await sweeper().sweep();

    expect(result.cancelled).toBe(250);
    const { orders, changes, outbox, refunds } = await written([...due, notDue]);
    expect(orders.find((row) => row.order_id === notDue)).toMatchObject({
      status: 'pending',
      version: 1,
    });
    const cancelled = orders.filter((row) => row.order_id !== notDue);
    expect(cancelled).toHaveLength(250);
    for (const row of cancelled) {
      expect(row).toMatchObject({
        state: 'cancelled',
        status: 'cancelled',
        version: 2,
        cancelled_by: 'platform',
        cancel_reason: 'not accepted in time',
      });
      // The deadline that passed stays on the order.
      expect(row.accept_by).not.toBeNull();
    }
    expect(changes).toHaveLength(250);
    expect(changes.map((change) => change.order_id)).toEqual(sameIds(due));
    for (const change of changes) {
      expect(change).toMatchObject({
        version: 2,
        status: 'cancelled',
        previous_status: 'pending',
        cancelled_by: 'platform',
      });
    }
    expect(outbox).toHaveLength(250);
    expect(outbox.map((event) => event.aggregate_id)).toEqual(sameIds(due));
    for (const event of outbox) {
      expect(event.aggregate_version).toBe(2);
      expect(event.payload).toMatchObject({
        version: 2,
        data: {
          event: 'order.cancelled',
          orderId: event.aggregate_id,
          previousStatus: 'pending',
          cancelReason: 'not accepted in time',
          cancelledBy: 'platform',
          storePartnerId,
        },
      });
    }
    // Card orders only, one each, under the order's key.
    expect(refunds).toHaveLength(card.length);
    expect(refunds.map((refund) => refund.order_id)).toEqual(sameIds(card));
    for (const refund of refunds) {
      expect(refund).toMatchObject({
        idempotency_key: `order-cancel-${refund.order_id}`,
        state: 'owed',
        reason: 'cancel',
        amount: null,
      });
    }
    // 50 timeouts in a row per store: 16 pauses made due, a run of 2 left. The pause was
    // asked (no stores service: it failed and waits for its back-off).
    const runs = await db
      .selectFrom('store_acceptance_timeouts')
      .selectAll()
      .where('store_id', 'in', stores)
      .execute();
    expect(runs).toHaveLength(5);
    for (const run of runs) {
      expect(run).toMatchObject({ consecutive: 2, pause_tries: 1 });
      expect(run.pause_due_at).not.toBeNull();
    }
  });

  it('leaves the order a store confirms meanwhile confirmed, not refunded, and cancels the rest', async () => {
    const storeId = randomUUID();
    const due = [];
    for (let i = 0; i < 20; i++) due.push(await seedPending(storeId, -1_000));
    const accepted = due[7]!;

    // The store's confirm holds the order's lock while the sweep runs, then commits.
    let swept: { cancelled: number } | undefined;
    await db.transaction().execute(async (trx) => {
      const row = await lockStoreOrder(trx, accepted, storePartnerId);
      await writeOrderMove(
        trx,
        row!,
        {
          kind: 'moved',
          state: 'open',
          status: 'confirmed',
          event: 'order.status_changed',
          previousStatus: 'pending',
        },
        { clock: () => new Date(), prefix: env.prefix },
      );
      swept = await sweeper().sweep();
    });
    expect(swept).toMatchObject({ cancelled: 19 });
    // Swept again after the confirm committed: nothing more to do.
    expect(await sweeper().sweep()).toMatchObject({ cancelled: 0 });

    const { orders, changes, outbox, refunds } = await written(due);
    const confirmed = orders.find((row) => row.order_id === accepted);
    expect(confirmed).toMatchObject({ status: 'confirmed', version: 2, accept_by: null });
    expect(confirmed!.cancelled_by).toBeNull();
    expect(orders.filter((row) => row.status === 'cancelled')).toHaveLength(19);
    expect(changes).toHaveLength(20);
    expect(changes.find((change) => change.order_id === accepted)).toMatchObject({
      status: 'confirmed',
    });
    expect(outbox).toHaveLength(20);
    expect(refunds.map((refund) => refund.order_id)).not.toContain(accepted);
    expect(refunds).toHaveLength(19);
  });

  it('with two sweepers on the same due orders, cancels each once', async () => {
    const storeId = randomUUID();
    const due = [];
    for (let i = 0; i < 300; i++) due.push(await seedPending(storeId, -1_000));
    const [one, two] = [sweeper(), sweeper()];

    const results = await Promise.all([one.sweep(), two.sweep(), one.sweep(), two.sweep()]);

    // A sweep joined while running counts once: the first two are the sweepers' own runs.
    expect(results[0].cancelled + results[1].cancelled).toBe(300);
    const { orders, changes, outbox, refunds } = await written(due);
    expect(orders.every((row) => row.status === 'cancelled' && row.version === 2)).toBe(true);
    expect(changes).toHaveLength(300);
    expect(outbox).toHaveLength(300);
    expect(refunds).toHaveLength(300);
    expect(new Set(refunds.map((refund) => refund.order_id)).size).toBe(300);
  });

  it('cancels the rest of a batch that one order fails, and leaves that one pending', async () => {
    const storeId = randomUUID();
    const due = [];
    for (let i = 0; i < 10; i++) due.push(await seedPending(storeId, -1_000));
    const poisoned = due[3]!;
    // Its next version's history row already exists: cancelling it fails.
    await db
      .insertInto('order_status_changes')
      .values({
        order_id: poisoned,
        version: 2,
        state: 'open',
        status: 'pending',
        previous_status: 'pending',
        estimated_ready_at: null,
        cancel_reason: null,
        cancelled_by: null,
        changed_at: new Date(),
      })
      .execute();

    expect(await sweeper().sweep()).toMatchObject({ cancelled: 9 });

    const { orders, outbox, refunds } = await written(due);
    expect(orders.find((row) => row.order_id === poisoned)).toMatchObject({
      status: 'pending',
      version: 1,
    });
    expect(orders.filter((row) => row.status === 'cancelled')).toHaveLength(9);
    expect(outbox).toHaveLength(9);
    expect(refunds.map((refund) => refund.order_id)).not.toContain(poisoned);
    expect(refunds).toHaveLength(9);
    // Cured, it is cancelled by the next sweep.
    await db.deleteFrom('order_status_changes').where('order_id', '=', poisoned).execute();
    expect(await sweeper().sweep()).toMatchObject({ cancelled: 1 });
  });
});
