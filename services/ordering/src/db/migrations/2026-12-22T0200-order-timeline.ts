import { sql, type Kysely } from 'kysely';

/**
 * What an order's timeline and the partner's order list read
 * (docs/guide/orders.md#an-orders-timeline):
 * - every version of an order as it was made (its status change), written in the transaction
 *   of the change; orders placed before keep their current version only;
 * - every try of an order event's webhook delivery, with its outcome and latency, deleted
 *   with its delivery (the retention prune, a test reset);
 * - the placing partner's orders newest first, all or of one status, by keyset.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('order_status_changes')
    .addColumn('order_id', 'uuid', (col) =>
      col.notNull().references('orders.order_id').onDelete('cascade'),
    )
    .addColumn('version', 'integer', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('previous_status', 'text')
    .addColumn('estimated_ready_at', 'timestamptz')
    .addColumn('cancel_reason', 'text')
    .addColumn('cancelled_by', 'text')
    .addColumn('changed_at', 'timestamptz', (col) => col.notNull())
    .addPrimaryKeyConstraint('order_status_changes_pkey', ['order_id', 'version'])
    .execute();
  await sql`
    insert into order_status_changes
      (order_id, version, state, status, estimated_ready_at, cancel_reason, cancelled_by, changed_at)
    select order_id, version, state, status, estimated_ready_at, cancel_reason, cancelled_by,
           updated_at
      from orders
  `.execute(db);

  await db.schema
    .createTable('webhook_delivery_attempts')
    .addColumn('delivery_id', 'uuid', (col) =>
      col.notNull().references('webhook_deliveries.delivery_id').onDelete('cascade'),
    )
    .addColumn('attempt_id', 'bigint', (col) => col.notNull().generatedAlwaysAsIdentity())
    // The delivery's try count after this try (a resend counts from 1 again).
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('outcome', 'text', (col) =>
      col.notNull().check(sql`outcome in ('delivered', 'failed', 'dead')`),
    )
    .addColumn('response_status', 'integer')
    .addColumn('latency_ms', 'integer', (col) => col.notNull())
    .addColumn('error', 'text')
    .addColumn('tried_at', 'timestamptz', (col) => col.notNull())
    .addPrimaryKeyConstraint('webhook_delivery_attempts_pkey', ['delivery_id', 'attempt_id'])
    .execute();

  await db.schema
    .createIndex('orders_partner_created_idx')
    .on('orders')
    .columns(['partner_id', 'created_at desc', 'order_id desc'])
    .execute();
  await db.schema
    .createIndex('orders_partner_status_created_idx')
    .on('orders')
    .columns(['partner_id', 'status', 'created_at desc', 'order_id desc'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('orders_partner_status_created_idx').execute();
  await db.schema.dropIndex('orders_partner_created_idx').execute();
  await db.schema.dropTable('webhook_delivery_attempts').execute();
  await db.schema.dropTable('order_status_changes').execute();
}
