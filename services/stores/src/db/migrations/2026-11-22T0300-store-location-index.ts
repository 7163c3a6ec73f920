import { sql, type Kysely } from 'kysely';

/**
 * Discovery's prefilter: a GiST index on the store's location as a built-in `point`, so a
 * bounding box is an index range in both dimensions (the btree on (latitude, longitude)
 * could only range over latitude). No extension needed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('stores_location_idx').execute();
  await sql`create index stores_location_gist on stores using gist (point(longitude, latitude))`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('stores_location_gist').execute();
  await db.schema
    .createIndex('stores_location_idx')
    .on('stores')
    .columns(['latitude', 'longitude'])
    .execute();
}
