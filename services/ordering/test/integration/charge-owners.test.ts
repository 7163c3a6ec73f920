import { subjects } from '@pcp/contracts';
import { createDatabase, createLocalSubjects, outboxRowOf } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { ORDERING_SCHEMA, type OrderingDatabase } from '../../src/app.js';
import type { OrderDetails, OrderRow } from '../../src/db/ordering.table.js';
import { orderEventOf, statusChangeOf } from '../../src/lifecycle/order.repository.js';
import { oweCancelRefund } from '../../src/lifecycle/order-refunds.js';
import {
  chargeOwnersHandler,
  type ChargeOwnersDeps,
} from '../../src/place/charge-owners.handlers.js';
import {
  advanceAttempt,
  claimAttempt,
  recordPlacedOrder,
  type HeldAttempt,
} from '../../src/place/place-attempt.repository.js';

/**
 * Who holds a charge, as payments' reconciler asks: answered from one snapshot, so an order
 * that place records while the question is being answered is never reported as "no order,
 * attempt answered" (the reconciler would refund a live order for it).
 */

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-charge-owners',
  });
});

afterAll(async () => {
  await db.destroy();
  await env.cleanup();
});

const TOTAL_MINOR = 2_364;

/** A place attempt that captured its charge and has not recorded its order yet. */
async function capturingAttempt(): Promise<HeldAttempt & { charge_id: string }> {
  const holder = randomUUID();
  const claim = await claimAttempt(db, {
    key: randomUUID(),
    partnerId: randomUUID(),
    endUserId: 'diner',
    mode: 'live',
    fingerprint: 'f',
    orderId: randomUUID(),
    holder,
    leaseMs: 60_000,
    retentionMs: 24 * 3_600_000,
  });
  if (claim.kind !== 'claimed') throw new Error(`a fresh key is claimed, not ${claim.kind}`);
  const chargeId = randomUUID();
  const validated = await advanceAttempt(db, claim.attempt, 'validated', {
    snapshot: { storeId: randomUUID() } as never,
  });
  const capturing = await advanceAttempt(db, validated, 'capturing', { charge_id: chargeId });
  return { ...capturing, charge_id: chargeId, lease_owner: holder };
}

function orderOf(attempt: HeldAttempt & { charge_id: string }): OrderRow {
  const now = new Date();
  return {
    order_id: attempt.order_id,
    partner_id: attempt.partner_id,
    end_user_id: attempt.end_user_id,
    store_id: randomUUID(),
    store_partner_id: randomUUID(),
    mode: 'live',
    fulfillment_mode: 'PICKUP',
    state: 'open',
    status: 'pending',
    version: 1,
    details: { paymentType: 'CARD' } as OrderDetails,
    charge_id: attempt.charge_id,
    total_minor: TOTAL_MINOR,
    currency: 'USD',
    estimated_ready_at: null,
    accept_by: null,
    cancel_reason: null,
    cancelled_by: null,
    store_deleted_at: null,
    created_at: now,
    updated_at: now,
  };
}

/** What place's last step commits: the order and the key's answer, in one statement. */
const recordOrder = (attempt: HeldAttempt & { charge_id: string }) => {
  const order = orderOf(attempt);
  const { values: event, envelope } = outboxRowOf(
    orderEventOf(order, 'order.created', null, env.prefix),
  );
  return recordPlacedOrder(
    db,
    attempt,
    { order, statusChange: statusChangeOf(order, null), event, envelope },
    { status: 201, body: '{}' },
    24 * 3_600_000,
  );
};

/** Ask the question through the subject's contract, the handler built with `deps`. */
async function ask(
  attempt: { order_id: string; charge_id: string },
  deps: Omit<ChargeOwnersDeps, 'db'> = {},
) {
  const local = createLocalSubjects();
  local.bind([chargeOwnersHandler({ db, ...deps })]);
  const { owners } = await local.request(
    subjects.ordering.chargeOwners,
    { charges: [{ chargeId: attempt.charge_id, orderId: attempt.order_id }] },
    { requestId: randomUUID() },
  );
  return owners[0]!;
}

describe('charge owners', () => {
  it('answer from one snapshot when place records the order between the two reads', async () => {
    const attempt = await capturingAttempt();
    // Held between the reads until the order and its answer are committed.
    const owner = await ask(attempt, {
      betweenReads: async () => void (await recordOrder(attempt)),
    });
    // As of the snapshot: the attempt unanswered and no order yet, which the reconciler
    // leaves in flight; never "answered" without the order it recorded.
    expect(owner).toMatchObject({ orders: [], attempt: { answered: false, step: 'capturing' } });
    // Asked again, both are there.
    expect(await ask(attempt)).toMatchObject({
      orders: [{ orderId: attempt.order_id, state: 'open', totalMinor: TOTAL_MINOR }],
      attempt: { answered: true, step: 'recorded' },
    });
  });

  it('torn into two reads (the planted defect, as the handler once was), report the live order as none', async () => {
    const attempt = await capturingAttempt();
    const owner = await ask(attempt, {
      mutant: 'owners-torn',
      betweenReads: async () => void (await recordOrder(attempt)),
    });
    // What made the reconciler refund a live order: no order, the attempt answered.
    expect(owner).toMatchObject({ orders: [], attempt: { answered: true } });
  });

  it('name the refund a cancelled order owes, and when it was owed from', async () => {
    const attempt = await capturingAttempt();
    await recordOrder(attempt);
    const cancelled = await db
      .updateTable('orders')
      .set({ state: 'cancelled', status: 'cancelled', cancelled_by: 'store', version: 2 })
      .where('order_id', '=', attempt.order_id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await oweCancelRefund(db, cancelled);
    expect((await ask(attempt)).orders).toEqual([
      expect.objectContaining({
        state: 'cancelled',
        refund: 'owed',
        refundOwedSince: expect.any(String),
      }),
    ]);
    await db
      .updateTable('order_refunds')
      .set({ state: 'settled' })
      .where('order_id', '=', attempt.order_id)
      .execute();
    expect((await ask(attempt)).orders).toEqual([
      expect.objectContaining({ refund: 'settled', refundOwedSince: null }),
    ]);
  });
});
