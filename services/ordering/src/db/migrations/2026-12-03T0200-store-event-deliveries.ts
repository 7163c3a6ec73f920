import { sql, type Kysely } from 'kysely';

const open = sql<boolean>`status in ('pending', 'failed')`;

// Store events (docs/guide/webhooks.md#store-events) share the deliveries table with order
// events: one row per subscribed partner, in order per (partner, store) by the store's event
// version. `sequence_key` names what a row is in order within (an order; a partner's view of a
// store), so the in-order rule reads one column for both kinds.
export async function up(db: Kysely<unknown>): Promise<void> {
  // A store event's body is the same for every partner: it is stored once here (a fan-out to
  // a thousand partners must not write it a thousand times), and its row is also the mark
  // that the store's version was recorded, which the next version's rows wait for.
  await db.schema
    .createTable('webhook_store_events')
    .addColumn('event_id', 'uuid', (col) => col.primaryKey())
    .addColumn('store_id', 'uuid', (col) => col.notNull())
    .addColumn('version', 'integer', (col) => col.notNull())
    .addColumn('event_type', 'text', (col) => col.notNull())
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn('occurred_at', 'timestamptz', (col) => col.notNull())
    .addColumn('origin', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('webhook_store_events_store_version_key', ['store_id', 'version'])
    .execute();
  await db.schema
    .createIndex('webhook_store_events_created_idx')
    .on('webhook_store_events')
    .column('created_at')
    .execute();

  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('store_id', 'uuid')
    .addColumn('sequence_key', 'text')
    .alterColumn('order_id', (col) => col.dropNotNull())
    // A store event's row reads its body from webhook_store_events.
    .alterColumn('payload', (col) => col.dropNotNull())
    .execute();
  await sql`
    update webhook_deliveries
       set store_id = (payload::jsonb #>> '{data,storeId}')::uuid, sequence_key = order_id::text
  `.execute(db);
  await db.schema
    .alterTable('webhook_deliveries')
    .alterColumn('store_id', (col) => col.setNotNull())
    .alterColumn('sequence_key', (col) => col.setNotNull())
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .addCheckConstraint(
      'webhook_deliveries_kind_check',
      sql`(order_id is not null and payload is not null) or (order_id is null and payload is null)`,
    )
    .execute();

  // Recording's idempotency: one row per sequence and version.
  await db.schema
    .alterTable('webhook_deliveries')
    .addUniqueConstraint('webhook_deliveries_sequence_version_key', ['sequence_key', 'version'])
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .dropConstraint('webhook_deliveries_order_version_key')
    .execute();
  // One store event goes to many partners under one webhook-id; a partner gets it once.
  await db.schema
    .alterTable('webhook_deliveries')
    .addUniqueConstraint('webhook_deliveries_event_partner_key', ['event_id', 'partner_id'])
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .dropConstraint('webhook_deliveries_event_id_key')
    .execute();

  // The in-order probe and the waiting sweep, by sequence instead of order.
  await db.schema.dropIndex('webhook_deliveries_open_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_open_idx')
    .on('webhook_deliveries')
    .columns(['sequence_key', 'version'])
    .where(open)
    .execute();
  await db.schema.dropIndex('webhook_deliveries_waiting_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_waiting_idx')
    .on('webhook_deliveries')
    .column('sequence_key')
    .where(sql<boolean>`status = 'pending' and next_attempt_at is null`)
    .execute();
  // Order deliveries are claimed before store deliveries: each kind scans its own due rows,
  // so a fan-out's thousand due rows are never in the way of an order's.
  await db.schema.dropIndex('webhook_deliveries_due_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_order_due_idx')
    .on('webhook_deliveries')
    .column('next_attempt_at')
    .where(sql<boolean>`status in ('pending', 'failed') and order_id is not null`)
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_store_due_idx')
    .on('webhook_deliveries')
    .column('next_attempt_at')
    .where(sql<boolean>`status in ('pending', 'failed') and order_id is null`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from webhook_deliveries where order_id is null`.execute(db);
  await db.schema.dropIndex('webhook_deliveries_store_due_idx').execute();
  await db.schema.dropIndex('webhook_deliveries_order_due_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_due_idx')
    .on('webhook_deliveries')
    .columns(['next_attempt_at'])
    .where(open)
    .execute();
  await db.schema.dropIndex('webhook_deliveries_waiting_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_waiting_idx')
    .on('webhook_deliveries')
    .column('order_id')
    .where(sql<boolean>`status = 'pending' and next_attempt_at is null`)
    .execute();
  await db.schema.dropIndex('webhook_deliveries_open_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_open_idx')
    .on('webhook_deliveries')
    .columns(['order_id', 'version'])
    .where(open)
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .addUniqueConstraint('webhook_deliveries_event_id_key', ['event_id'])
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .dropConstraint('webhook_deliveries_event_partner_key')
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .addUniqueConstraint('webhook_deliveries_order_version_key', ['order_id', 'version'])
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .dropConstraint('webhook_deliveries_sequence_version_key')
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .dropConstraint('webhook_deliveries_kind_check')
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .dropColumn('sequence_key')
    .dropColumn('store_id')
    .alterColumn('order_id', (col) => col.setNotNull())
    .alterColumn('payload', (col) => col.setNotNull())
    .execute();
  await db.schema.dropTable('webhook_store_events').execute();
}
