import { sql, type Kysely, type Updateable } from 'kysely';
import type {
  CardRow,
  ChargeRow,
  ChargeTable,
  PaymentsDatabase,
  RefundRow,
} from './payments.table.js';

type Db = Kysely<PaymentsDatabase>;

/** The charge of an order (place attempt), if it has one. */
export function findChargeByOrder(db: Db, orderId: string): Promise<ChargeRow | undefined> {
  return db.selectFrom('charges').selectAll().where('order_id', '=', orderId).executeTakeFirst();
}

/** Record an attempt before the processor hears of it; the order's existing charge wins. */
export async function insertCharge(
  db: Db,
  charge: Pick<
    ChargeRow,
    | 'charge_id'
    | 'partner_id'
    | 'end_user_id'
    | 'payment_id'
    | 'order_id'
    | 'amount'
    | 'currency'
    | 'mode'
  > & { order_id: string },
): Promise<ChargeRow> {
  const inserted = await db
    .insertInto('charges')
    .values({ ...charge, status: 'authorizing' })
    .onConflict((oc) => oc.column('order_id').doNothing())
    .returningAll()
    .executeTakeFirst();
  return inserted ?? (await findChargeByOrder(db, charge.order_id))!;
}

/** What a charge shows of its card (a deleted card's too: its charges outlive it). */
export type ChargeCard = Pick<CardRow, 'brand' | 'last4'>;

/** A charge of the partner's, with its card's brand and last4, in one round trip. */
export async function findPartnerCharge(
  db: Db,
  partnerId: string,
  chargeId: string,
): Promise<{ row: ChargeRow; card: ChargeCard } | undefined> {
  const found = await db
    .selectFrom('charges')
    .innerJoin('cards', 'cards.payment_id', 'charges.payment_id')
    .selectAll('charges')
    .select(['cards.brand as card_brand', 'cards.last4 as card_last4'])
    .where('charges.charge_id', '=', chargeId)
    .where('charges.partner_id', '=', partnerId)
    .executeTakeFirst();
  if (!found) return undefined;
  const { card_brand: brand, card_last4: last4, ...row } = found;
  return { row, card: { brand, last4 } };
}

/**
 * Move a charge on from the state it was read in; undefined when another request moved it
 * first (the caller reads it again).
 */
export function updateCharge(
  db: Db,
  from: Pick<ChargeRow, 'charge_id' | 'status' | 'processor_attempt'>,
  change: Updateable<ChargeTable>,
): Promise<ChargeRow | undefined> {
  return db
    .updateTable('charges')
    .set({ ...change, updated_at: sql`now()` })
    .where('charge_id', '=', from.charge_id)
    .where('status', '=', from.status)
    .where('processor_attempt', '=', from.processor_attempt)
    .returningAll()
    .executeTakeFirst();
}

export function findRefund(
  db: Db,
  chargeId: string,
  idempotencyKey: string,
): Promise<RefundRow | undefined> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('charge_id', '=', chargeId)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
}

/** The refund recorded under this key for the charge, recorded as pending if new. */
export async function claimRefund(
  db: Db,
  refund: Pick<RefundRow, 'refund_id' | 'charge_id' | 'idempotency_key' | 'amount'>,
): Promise<RefundRow> {
  const inserted = await db
    .insertInto('refunds')
    .values({ ...refund, status: 'pending', processor_refund_id: null })
    .onConflict((oc) => oc.constraint('refunds_idempotency_key').doNothing())
    .returningAll()
    .executeTakeFirst();
  return inserted ?? (await findRefund(db, refund.charge_id, refund.idempotency_key))!;
}

/**
 * Refunds the processor made: each settles (`processorRefundId` null when only the
 * processor's total says it was made, its own answer lost), and the charge's refunded amount
 * becomes the sum of its settled refunds, so settling one twice, or from two places at once,
 * never counts it twice.
 */
export function settleRefunds(
  db: Db,
  chargeId: string,
  refunds: readonly { refundId: string; processorRefundId: string | null }[],
): Promise<ChargeRow> {
  return db.transaction().execute(async (trx) => {
    for (const { refundId, processorRefundId } of refunds) {
      await trx
        .updateTable('refunds')
        .set({ status: 'succeeded', processor_refund_id: processorRefundId })
        .where('refund_id', '=', refundId)
        .where('status', '=', 'pending')
        .execute();
    }
    const settled = sql<number>`(select coalesce(sum(amount), 0) from refunds
      where refunds.charge_id = charges.charge_id and refunds.status = 'succeeded')`;
    return trx
      .updateTable('charges')
      .set({
        refunded_amount: settled,
        status: sql<
          ChargeRow['status']
        >`case when ${settled} >= captured_amount then 'refunded' when ${settled} > 0 then 'partially_refunded' else status end`,
        updated_at: sql`now()`,
      })
      .where('charge_id', '=', chargeId)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/** A charge's refunds whose processor outcome was never recorded, oldest first. */
export function pendingRefunds(db: Db, chargeId: string): Promise<RefundRow[]> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('charge_id', '=', chargeId)
    .where('status', '=', 'pending')
    .orderBy('created_at')
    .execute();
}
