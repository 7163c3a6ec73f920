import { sql, type Kysely } from 'kysely';

/**
 * A store is of its owner's mode (docs/guide/sandbox.md#modes), set when it is created and never
 * changed; stores made before modes are live. Discovery filters by it, so the location index
 * carries it too and discovery stays an index-only scan.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('stores')
    .addColumn('mode', 'text', (col) =>
      col
        .notNull()
        .defaultTo('live')
        .check(sql`mode in ('live', 'test')`),
    )
    .execute();
  await sql`create index stores_location_covering_next on stores using gist (point(longitude, latitude))
    include (store_id, latitude, longitude, fulfillment_types, delivery_radius_meters, mode)`.execute(
    db,
  );
  await db.schema.dropIndex('stores_location_covering').execute();
  await sql`alter index stores_location_covering_next rename to stores_location_covering`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('stores_location_covering').execute();
  await sql`create index stores_location_covering on stores using gist (point(longitude, latitude))
    include (store_id, latitude, longitude, fulfillment_types, delivery_radius_meters)`.execute(db);
  await db.schema.alterTable('stores').dropColumn('mode').execute();
}
