import type { Kysely } from 'kysely';

/** max(delivery_radius_meters) sizes the delivery search box; with this index it is one probe. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('stores_delivery_radius_idx')
    .on('stores')
    .column('delivery_radius_meters')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('stores_delivery_radius_idx').execute();
}
