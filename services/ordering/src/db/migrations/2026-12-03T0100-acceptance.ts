import { sql, type Kysely } from 'kysely';

/**
 * The acceptance window (docs/guide/orders.md#acceptance-window): a pending order's deadline
 * is stored (durable across restarts and shared by every replica), who cancelled an order is
 * kept, and each store's run of orders not accepted in time is counted, with the platform
 * pause it owes once the run reaches 3 (kept until stores took it).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('accept_by', 'timestamptz')
    .addColumn('cancelled_by', 'text', (col) =>
      col.check(sql`cancelled_by in ('store', 'platform')`),
    )
    .execute();
  // Orders cancelled so far were cancelled by their stores. Pending orders placed before the
  // window existed keep no deadline: the platform never cancels an order it never promised to.
  await sql`update orders set cancelled_by = 'store' where state = 'cancelled'`.execute(db);
  // The sweeper's scan: only pending orders with a deadline, by deadline.
  await db.schema
    .createIndex('orders_accept_by_pending_idx')
    .on('orders')
    .column('accept_by')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema
    .createTable('store_acceptance_timeouts')
    .addColumn('store_id', 'uuid', (col) => col.primaryKey())
    // The store's owner, on whose behalf the pause is asked.
    .addColumn('store_partner_id', 'uuid', (col) => col.notNull())
    // Orders in a row not accepted in time; a confirm resets it.
    .addColumn('consecutive', 'integer', (col) => col.notNull().defaultTo(0))
    // Set when the run reached 3: when to ask stores for the pause next (until it answers).
    .addColumn('pause_due_at', 'timestamptz')
    .addColumn('pause_tries', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('store_acceptance_timeouts_pause_idx')
    .on('store_acceptance_timeouts')
    .column('pause_due_at')
    .where(sql.ref('pause_due_at'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('store_acceptance_timeouts').execute();
  await db.schema.dropIndex('orders_accept_by_pending_idx').execute();
  await db.schema.alterTable('orders').dropColumn('cancelled_by').dropColumn('accept_by').execute();
}
