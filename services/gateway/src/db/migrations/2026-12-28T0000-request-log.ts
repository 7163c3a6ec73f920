import { sql, type Kysely } from 'kysely';

/**
 * The request log (docs/guide/requests.md): each authenticated request of a tenant, read
 * newest first by tenant and swept by age; and when each API key was last used.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('request_log')
    .addColumn('id', 'bigint', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('tenant_id', 'uuid', (col) => col.notNull())
    .addColumn('at', 'timestamptz', (col) => col.notNull())
    .addColumn('method', 'text', (col) => col.notNull())
    .addColumn('path', 'text', (col) => col.notNull())
    .addColumn('status', 'smallint', (col) => col.notNull())
    .addColumn('error_code', 'text')
    .addColumn('request_id', 'text', (col) => col.notNull())
    .addColumn('idempotency_key', 'text')
    .addColumn('latency_ms', 'integer', (col) => col.notNull())
    .addColumn('key_id', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('request_log_tenant_at_idx')
    .on('request_log')
    .expression(sql`tenant_id, at desc, id desc`)
    .execute();
  // The retention sweep's: rows past the retention, whoever's.
  await db.schema.createIndex('request_log_at_idx').on('request_log').column('at').execute();
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'timestamptz').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('last_used_at').execute();
  await db.schema.dropTable('request_log').execute();
}
