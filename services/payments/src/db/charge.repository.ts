import { sql, type Kysely, type Updateable } from 'kysely';
import { randomUUID } from 'node:crypto';
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
 * first (the caller reads it again). `relaxed`: its commit does not wait for the WAL flush
 * (synchronous_commit off for its own transaction), for a change the processor holds the
 * truth of, which payments learns again from it when a database crash loses the change.
 */
export function updateCharge(
  db: Db,
  from: Pick<ChargeRow, 'charge_id' | 'status' | 'processor_attempt'>,
  change: Updateable<ChargeTable>,
  commit: 'durable' | 'relaxed' = 'durable',
): Promise<ChargeRow | undefined> {
  return (
    db
      .updateTable('charges')
      .set({ ...change, updated_at: sql`now()` })
      .where('charge_id', '=', from.charge_id)
      .where('status', '=', from.status)
      .where('processor_attempt', '=', from.processor_attempt)
      // A row is written only where every condition held, this one included.
      .$if(commit === 'relaxed', (qb) =>
        qb.where(sql<boolean>`set_config('synchronous_commit', 'off', true) is not null`),
      )
      .returningAll()
      .executeTakeFirst()
  );
}

/** What claiming a refund under a key found (with the charge as its lock read it). */
export type RefundClaim =
  /** Send this refund to the processor (new, still pending, or failed and asked again). */
  | { readonly kind: 'send'; readonly refund: RefundRow; readonly charge: ChargeRow }
  /** The key's refund was made: nothing to send. */
  | { readonly kind: 'succeeded'; readonly refund: RefundRow; readonly charge: ChargeRow }
  /** A refund of the rest with nothing left to refund: nothing to send, nothing recorded. */
  | { readonly kind: 'nothing_left'; readonly charge: ChargeRow };

/** Why a refund cannot be claimed, for the caller to answer. */
export class RefundRefusedError extends Error {
  constructor(
    readonly reason: 'not_refundable' | 'too_large' | 'key_conflict',
    readonly charge: ChargeRow,
  ) {
    super(reason);
    this.name = 'RefundRefusedError';
  }
}

/**
 * Claim the refund of `amount` (or, without one, of whatever is left) under `idempotencyKey`,
 * with the charge's row locked, so refunds under different keys never claim together more
 * than was captured: what is left is the capture less every refund that succeeded or is
 * still pending. A key used before gets its own refund back (a failed one is revived as a
 * new processor attempt, a refusal having moved no money).
 */
export function claimRefund(
  db: Db,
  claim: { chargeId: string; idempotencyKey: string; amount: number | undefined },
): Promise<RefundClaim> {
  return db.transaction().execute(async (trx) => {
    const charge = await trx
      .selectFrom('charges')
      .selectAll()
      .where('charge_id', '=', claim.chargeId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const refunds = await trx
      .selectFrom('refunds')
      .selectAll()
      .where('charge_id', '=', claim.chargeId)
      .execute();
    const earlier = refunds.find((refund) => refund.idempotency_key === claim.idempotencyKey);
    if (earlier && claim.amount !== undefined && earlier.amount !== claim.amount) {
      throw new RefundRefusedError('key_conflict', charge);
    }
    if (earlier?.status === 'succeeded') return { kind: 'succeeded', refund: earlier, charge };
    if (earlier?.status === 'pending') return { kind: 'send', refund: earlier, charge };
    const refundable = ['captured', 'partially_refunded', 'refunded'].includes(charge.status);
    if (!refundable || !charge.processor_authorization_id) {
      throw new RefundRefusedError('not_refundable', charge);
    }
    const outstanding = refunds
      .filter((refund) => refund.status !== 'failed')
      .reduce((sum, refund) => sum + refund.amount, 0);
    const left = charge.captured_amount - outstanding;
    const amount = claim.amount ?? left;
    if (amount === 0 && claim.amount === undefined) return { kind: 'nothing_left', charge };
    if (amount > left) throw new RefundRefusedError('too_large', charge);
    // The charge changes with a refund asked: the reconciler looks at it again.
    const changed = await trx
      .updateTable('charges')
      .set({ updated_at: sql`now()` })
      .where('charge_id', '=', claim.chargeId)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (earlier) {
      const revived = await trx
        .updateTable('refunds')
        .set({
          status: 'pending',
          amount,
          failure_code: null,
          processor_attempt: sql<number>`processor_attempt + 1`,
          updated_at: sql<Date>`now()`,
        })
        .where('refund_id', '=', earlier.refund_id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { kind: 'send', refund: revived, charge: changed };
    }
    const inserted = await trx
      .insertInto('refunds')
      .values({
        refund_id: randomUUID(),
        charge_id: claim.chargeId,
        idempotency_key: claim.idempotencyKey,
        amount,
        status: 'pending',
        processor_refund_id: null,
        failure_code: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { kind: 'send', refund: inserted, charge: changed };
  });
}

/** The processor refused a refund: it is failed with the processor's code, no longer pending. */
export async function failRefund(db: Db, refundId: string, failureCode: string): Promise<void> {
  await db
    .updateTable('refunds')
    .set({ status: 'failed', failure_code: failureCode.slice(0, 100), updated_at: sql`now()` })
    .where('refund_id', '=', refundId)
    .where('status', '=', 'pending')
    .execute();
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
        .set({
          status: 'succeeded',
          processor_refund_id: processorRefundId,
          updated_at: sql`now()`,
        })
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
