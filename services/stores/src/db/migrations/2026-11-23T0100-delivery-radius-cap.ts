import { sql, type Kysely } from 'kysely';

/**
 * Delivery radii are at most 50 km (docs/guide/stores.md#store-lookup): the largest radius sizes
 * the search box of every delivery discovery. Profiles saved before the cap deliver as far as the
 * cap allows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`update stores set delivery_radius_meters = 50000 where delivery_radius_meters > 50000`.execute(
    db,
  );
  await sql`alter table stores add constraint stores_delivery_radius_cap
    check (delivery_radius_meters <= 50000)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table stores drop constraint stores_delivery_radius_cap`.execute(db);
}
