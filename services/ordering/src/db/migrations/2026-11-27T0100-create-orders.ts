import { createOutboxTable } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // One row per Idempotency-Key of place (docs/guide/orders.md#idempotency): who owns it, the body
  // it was used with, the last recovery point reached and, once final, the response to replay.
  await db.schema
    .createTable('place_attempts')
    .addColumn('idempotency_key', 'text', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('end_user_id', 'text', (col) => col.notNull())
    .addColumn('fingerprint', 'text', (col) => col.notNull())
    .addColumn('order_id', 'uuid', (col) => col.notNull().unique())
    .addColumn('step', 'text', (col) => col.notNull())
    .addColumn('snapshot', 'jsonb')
    .addColumn('charge_id', 'uuid')
    .addColumn('store_rejection', 'jsonb')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    .addColumn('response_status', 'integer')
    // text, not jsonb: a replay is byte-for-byte the first response.
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('place_attempts_expires_idx')
    .on('place_attempts')
    .column('expires_at')
    .execute();

  await db.schema
    .createTable('orders')
    .addColumn('order_id', 'uuid', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('end_user_id', 'text', (col) => col.notNull())
    .addColumn('store_id', 'uuid', (col) => col.notNull())
    .addColumn('store_partner_id', 'uuid', (col) => col.notNull())
    .addColumn('fulfillment_mode', 'text', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('version', 'integer', (col) => col.notNull())
    .addColumn('details', 'jsonb', (col) => col.notNull())
    .addColumn('charge_id', 'uuid')
    .addColumn('total_minor', 'bigint', (col) => col.notNull())
    .addColumn('currency', 'char(3)', (col) => col.notNull())
    .addColumn('estimated_ready_at', 'timestamptz')
    .addColumn('cancel_reason', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull())
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull())
    .execute();
  // The commerce list: a store's orders newest first, all or by status, by keyset.
  await db.schema
    .createIndex('orders_store_created_idx')
    .on('orders')
    .columns(['store_id', 'created_at desc', 'order_id desc'])
    .execute();
  await db.schema
    .createIndex('orders_store_status_created_idx')
    .on('orders')
    .columns(['store_id', 'status', 'created_at desc', 'order_id desc'])
    .execute();

  await createOutboxTable(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('outbox').execute();
  await db.schema.dropTable('orders').execute();
  await db.schema.dropTable('place_attempts').execute();
}
