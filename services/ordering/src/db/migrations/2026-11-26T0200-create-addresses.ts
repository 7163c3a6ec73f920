import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('addresses')
    .addColumn('address_id', 'uuid', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('end_user_id', 'text', (col) => col.notNull())
    // The address normalized (case, spacing): the same address saved twice is one row.
    .addColumn('fingerprint', 'text', (col) => col.notNull())
    .addColumn('address1', 'text', (col) => col.notNull())
    .addColumn('address2', 'text')
    .addColumn('city', 'text', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('postal_code', 'text', (col) => col.notNull())
    .addColumn('country', 'char(2)', (col) => col.notNull())
    .addColumn('latitude', 'double precision', (col) => col.notNull())
    .addColumn('longitude', 'double precision', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('addresses_owner_fingerprint_key')
    .on('addresses')
    .columns(['partner_id', 'end_user_id', 'fingerprint'])
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('addresses_owner_idx')
    .on('addresses')
    .columns(['partner_id', 'end_user_id', 'created_at'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('addresses').execute();
}
