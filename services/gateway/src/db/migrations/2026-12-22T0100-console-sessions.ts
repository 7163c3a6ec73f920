import { sql, type Kysely } from 'kysely';

/**
 * Console sessions (docs/guide/authentication.md#console-sessions): an API key exchanged for
 * a short-lived cookie. Only the SHA-256 of the session's random token is stored; the token
 * itself is in the browser's cookie alone, and its CSRF token is derived from it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('token_hash', 'bytea', (col) => col.primaryKey())
    .addColumn('key_id', 'text', (col) =>
      col.notNull().references('api_keys.key_id').onDelete('cascade'),
    )
    .addColumn('partner_id', 'uuid', (col) =>
      col.notNull().references('partners.partner_id').onDelete('cascade'),
    )
    // The tenant the key acts as (the test tenant for a test key): the cap is per tenant.
    .addColumn('tenant_id', 'uuid', (col) => col.notNull())
    .addColumn('kind', 'text', (col) =>
      col.notNull().check(sql`kind in ('commerce', 'distribution')`),
    )
    .addColumn('mode', 'text', (col) => col.notNull().check(sql`mode in ('live', 'test')`))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('last_seen_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('console_sessions_tenant_idx')
    .on('console_sessions')
    .columns(['tenant_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('console_sessions_key_idx')
    .on('console_sessions')
    .column('key_id')
    .execute();
  await db.schema
    .createIndex('console_sessions_partner_idx')
    .on('console_sessions')
    .column('partner_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('console_sessions').execute();
}
