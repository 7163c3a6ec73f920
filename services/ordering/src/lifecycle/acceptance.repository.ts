import { sql, type Kysely } from 'kysely';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { TIMEOUTS_BEFORE_PAUSE } from './acceptance-window.js';

type Db = Kysely<OrderingDatabase>;

/**
 * Up to `limit` pending orders with the oldest passed deadlines that no other transaction
 * holds (or only the order `only`, if it is one of them), locked until the caller's
 * transaction ends: replicas sweeping at once each take other orders.
 */
export function lockDueOrders(
  trx: Db,
  now: Date,
  { limit, skip, only }: { limit: number; skip: readonly string[]; only?: string },
): Promise<OrderRow[]> {
  let select = trx
    .selectFrom('orders')
    .selectAll()
    .where('status', '=', 'pending')
    .where('accept_by', '<=', now);
  if (only !== undefined) select = select.where('order_id', '=', only);
  if (skip.length > 0) select = select.where('order_id', 'not in', skip);
  return select.orderBy('accept_by').limit(limit).forUpdate().skipLocked().execute();
}

/**
 * Count the orders of each store not accepted in time, one statement for the batch: each one
 * more in the store's run, and every third in a row resets the run and makes a platform pause
 * due now (kept until stores took it). Stores are taken in id order, so two batches never
 * wait on each other's stores.
 */
export async function countTimeouts(
  trx: Db,
  orders: readonly Pick<OrderRow, 'store_id' | 'store_partner_id'>[],
  now: Date,
): Promise<void> {
  const perStore = new Map<string, { partner: string; count: number }>();
  for (const order of orders) {
    const store = perStore.get(order.store_id);
    if (store) store.count += 1;
    else perStore.set(order.store_id, { partner: order.store_partner_id, count: 1 });
  }
  if (perStore.size === 0) return;
  const stores = [...perStore.keys()].sort();
  const run = TIMEOUTS_BEFORE_PAUSE;
  // A run is below 3 between timeouts (the third resets it): n more end it at (run + n) % 3,
  // and pause the store when run + n reached 3.
  const added = sql<number>`(select s.n from s where s.store_id = excluded.store_id)`;
  await sql`
    with s (store_id, store_partner_id, n) as (
      select * from unnest(${stores}::uuid[],
                           ${stores.map((id) => perStore.get(id)!.partner)}::uuid[],
                           ${stores.map((id) => perStore.get(id)!.count)}::int[]))
    insert into store_acceptance_timeouts as t
           (store_id, store_partner_id, consecutive, pause_due_at, pause_tries, updated_at)
    select store_id, store_partner_id, n % ${run},
           case when n >= ${run} then ${now}::timestamptz end, 0, ${now}::timestamptz
      from s
     order by store_id
        on conflict (store_id) do update
       set consecutive = (t.consecutive + ${added}) % ${run},
           pause_due_at = case when t.consecutive + ${added} >= ${run}
                               then excluded.updated_at else t.pause_due_at end,
           pause_tries = case when t.consecutive + ${added} >= ${run}
                              then 0 else t.pause_tries end,
           updated_at = excluded.updated_at`.execute(trx);
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
