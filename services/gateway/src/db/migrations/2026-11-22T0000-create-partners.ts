import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('partners')
    .addColumn('partner_id', 'uuid', (col) => col.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('kind', 'text', (col) =>
      col.notNull().check(sql`kind in ('commerce', 'distribution')`),
    )
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('payment_types', sql`text[]`, (col) => col.notNull().defaultTo(sql`'{}'`))
    .addColumn('rate_limits', 'jsonb', (col) => col.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('api_keys')
    .addColumn('key_id', 'text', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) =>
      col.notNull().references('partners.partner_id').onDelete('cascade'),
    )
    .addColumn('key_hash', 'bytea', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_partner_idx').on('api_keys').column('partner_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('partners').execute();
}
