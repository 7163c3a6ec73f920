import type { Kysely } from 'kysely';

/** The store's active CatalogSet, learned from catalog.v1.activated events. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('stores')
    .addColumn('catalog_set_id', 'uuid')
    .addColumn('catalog_activated_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('stores')
    .dropColumn('catalog_set_id')
    .dropColumn('catalog_activated_at')
    .execute();
}
