import { sql, type Kysely } from 'kysely';

/**
 * The refunds ordering owes (docs/guide/orders.md#cancelling): a cancel commits the order
 * cancelled and its refund owed in one transaction, and the refund sweeper asks payments for
 * it under the row's one key until payments answers, backing off and raising it to operators
 * when it cannot. Before this, a cancel asked for the refund inside its open transaction, so a
 * timeout or a crash could refund an order that stayed open.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('order_refunds')
    // Payments' idempotency key of the refund: one per cause (a cancel's is its order's).
    .addColumn('idempotency_key', 'text', (col) => col.primaryKey())
    .addColumn('order_id', 'uuid', (col) =>
      col.notNull().references('orders.order_id').onDelete('cascade'),
    )
    .addColumn('charge_id', 'uuid', (col) => col.notNull())
    .addColumn('reason', 'text', (col) => col.notNull().check(sql`reason in ('cancel')`))
    // Null: whatever of the capture is left to refund (a cancel's).
    .addColumn('amount', 'bigint', (col) => col.check(sql`amount > 0`))
    .addColumn('state', 'text', (col) => col.notNull().check(sql`state in ('owed', 'settled')`))
    .addColumn('tries', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_try_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('last_error', 'text')
    // When it was raised to operators (once): tried too often, or refused for good.
    .addColumn('raised_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('settled_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('order_refunds_due_idx')
    .on('order_refunds')
    .column('next_try_at')
    .where(sql.ref('state'), '=', 'owed')
    .execute();
  await db.schema
    .createIndex('order_refunds_order_idx')
    .on('order_refunds')
    .column('order_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('order_refunds').execute();
}
