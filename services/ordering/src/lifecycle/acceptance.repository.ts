import { sql, type Kysely } from 'kysely';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { TIMEOUTS_BEFORE_PAUSE } from './acceptance-window.js';

type Db = Kysely<OrderingDatabase>;

/**
 * The pending order with the oldest passed deadline that no other transaction holds, locked
 * until the caller's transaction ends (replicas sweeping at once each take a different one).
 */
export function lockDueOrder(
  trx: Db,
  now: Date,
  skip: readonly string[],
): Promise<OrderRow | undefined> {
  let select = trx
    .selectFrom('orders')
    .selectAll()
    .where('status', '=', 'pending')
    .where('accept_by', '<=', now);
  if (skip.length > 0) select = select.where('order_id', 'not in', skip);
  return select.orderBy('accept_by').limit(1).forUpdate().skipLocked().executeTakeFirst();
}

/**
 * Count one more order of the store not accepted in time; the third in a row resets the run
 * and makes a platform pause due now (kept until stores took it).
 */
export async function countTimeout(
  trx: Db,
  order: Pick<OrderRow, 'store_id' | 'store_partner_id'>,
  now: Date,
): Promise<void> {
  const row = await trx
    .insertInto('store_acceptance_timeouts')
    .values({
      store_id: order.store_id,
      store_partner_id: order.store_partner_id,
      consecutive: 1,
      updated_at: now,
    })
    .onConflict((conflict) =>
      conflict.column('store_id').doUpdateSet({
        consecutive: sql`store_acceptance_timeouts.consecutive + 1`,
        updated_at: now,
      }),
    )
    .returning('consecutive')
    .executeTakeFirstOrThrow();
  if (row.consecutive < TIMEOUTS_BEFORE_PAUSE) return;
  await trx
    .updateTable('store_acceptance_timeouts')
    .set({ consecutive: 0, pause_due_at: now, pause_tries: 0 })
    .where('store_id', '=', order.store_id)
    .execute();
}

/** A confirm ends the store's run of orders not accepted in time. */
export async function resetTimeouts(trx: Db, storeId: string, now: Date): Promise<void> {
  await trx
    .updateTable('store_acceptance_timeouts')
    .set({ consecutive: 0, updated_at: now })
    .where('store_id', '=', storeId)
    .where('consecutive', '>', 0)
    .execute();
}

/** Stores whose platform pause is due at `now`, oldest first. */
export function duePauses(db: Db, now: Date, limit: number) {
  return db
    .selectFrom('store_acceptance_timeouts')
    .select(['store_id', 'store_partner_id', 'pause_due_at', 'pause_tries'])
    .where('pause_due_at', '<=', now)
    .orderBy('pause_due_at')
    .limit(limit)
    .execute();
}

/**
 * Take a due pause for this run: its next try moves `backoffMs` on first, so a replica that
 * dies mid-call leaves it to be tried again then, and another replica sweeping now skips it.
 * False when another run took it meanwhile.
 */
export async function claimPause(
  db: Db,
  pause: { store_id: string; pause_due_at: Date | null },
  retryAt: Date,
): Promise<boolean> {
  if (pause.pause_due_at === null) return false;
  const claimed = await db
    .updateTable('store_acceptance_timeouts')
    .set({ pause_due_at: retryAt, pause_tries: sql`pause_tries + 1` })
    .where('store_id', '=', pause.store_id)
    .where('pause_due_at', '=', pause.pause_due_at)
    .executeTakeFirst();
  return claimed.numUpdatedRows > 0n;
}

/** The pause is done: clear it unless another became due meanwhile (that one stays). */
export async function pauseDone(db: Db, storeId: string, claimedUntil: Date): Promise<void> {
  await db
    .updateTable('store_acceptance_timeouts')
    .set({ pause_due_at: null, pause_tries: 0 })
    .where('store_id', '=', storeId)
    .where('pause_due_at', '=', claimedUntil)
    .execute();
}
