import { sql, type Kysely } from 'kysely';

// The test-mode webhook stream (docs/guide/sandbox.md#webhook-stream): a tenant that opened one
// has its signing secret (sealed, like the endpoints') and a bounded log of its webhook events,
// appended by the recorders in the statement that records their deliveries.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_streams')
    .addColumn('partner_id', 'uuid', (col) => col.primaryKey())
    .addColumn('secret', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('webhook_stream_events')
    .addColumn('seq', 'bigint', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('webhook_id', 'text', (col) => col.notNull())
    .addColumn('event_type', 'text', (col) => col.notNull())
    .addColumn('body', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  // Reads (after a seq) and the per-tenant trim.
  await db.schema
    .createIndex('webhook_stream_events_partner_seq_idx')
    .on('webhook_stream_events')
    .columns(['partner_id', 'seq'])
    .execute();
  await db.schema
    .createIndex('webhook_stream_events_created_idx')
    .on('webhook_stream_events')
    .column('created_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_stream_events').execute();
  await db.schema.dropTable('webhook_streams').execute();
}
