import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('stores')
    .addColumn('store_id', 'uuid', (col) => col.primaryKey())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('phone', 'text', (col) => col.notNull())
    .addColumn('timezone', 'text', (col) => col.notNull())
    .addColumn('currency', 'char(3)', (col) => col.notNull())
    .addColumn('address1', 'text', (col) => col.notNull())
    .addColumn('address2', 'text')
    .addColumn('city', 'text', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('postal_code', 'text', (col) => col.notNull())
    .addColumn('country', 'char(2)', (col) => col.notNull())
    .addColumn('latitude', 'double precision', (col) => col.notNull())
    .addColumn('longitude', 'double precision', (col) => col.notNull())
    .addColumn('fulfillment_types', sql`text[]`, (col) => col.notNull())
    .addColumn('availability', 'jsonb', (col) => col.notNull())
    .addColumn('delivery_radius_meters', 'integer')
    .addColumn('delivery_fee_minor', 'bigint')
    .addColumn('delivery_minimum_order_minor', 'bigint')
    .addColumn('delivery_eta_minutes', 'integer')
    .addColumn('pickup_eta_minutes', 'integer')
    .addColumn('tax_rate_ppm', 'integer', (col) => col.notNull())
    .addColumn('minimum_order_minor', 'bigint', (col) => col.notNull())
    .addColumn('order_submission_url', 'text')
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('online', 'paused')`))
    .addColumn('pause_reason', 'text')
    .addColumn('paused_at', 'timestamptz')
    .addColumn('resume_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  // A partner's stores in creation order (the commerce list endpoint pages through these).
  await db.schema
    .createIndex('stores_partner_created_idx')
    .on('stores')
    .columns(['partner_id', 'created_at', 'store_id'])
    .execute();
  // Bounding-box prefilter for discovery by location.
  await db.schema
    .createIndex('stores_location_idx')
    .on('stores')
    .columns(['latitude', 'longitude'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('stores').execute();
}
