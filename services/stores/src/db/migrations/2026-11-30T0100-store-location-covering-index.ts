import { sql, type Kysely } from 'kysely';

/**
 * Discovery ranks and counts every store in its search box. Its columns are now carried by
 * the location index (INCLUDE), so that work is an index-only scan: a 50 km pickup search
 * in a big city read ~2,000 scattered heap pages for ~2,000 stores (rows are ~800 bytes);
 * from this index it reads ~60 pages, about 4× less Postgres time (npm run bench -- discovery).
 * Only small, bounded columns are included: availability (unbounded JSON) stays in the heap.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index stores_location_covering on stores using gist (point(longitude, latitude))
    include (store_id, latitude, longitude, fulfillment_types, delivery_radius_meters)`.execute(db);
  await db.schema.dropIndex('stores_location_gist').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`create index stores_location_gist on stores using gist (point(longitude, latitude))`.execute(
    db,
  );
  await db.schema.dropIndex('stores_location_covering').execute();
}
