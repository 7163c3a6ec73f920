import { createOutboxTable } from '@pcp/service-kit';
import type { Kysely } from 'kysely';

/**
 * Item availability overrides (docs/guide/stores.md#item-availability) with their version per
 * store, and the store events distribution partners subscribe to: one version sequence per
 * store for every kind, published through an outbox.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('item_availability_overrides')
    .addColumn('store_id', 'uuid', (col) =>
      col.notNull().references('stores.store_id').onDelete('cascade'),
    )
    .addColumn('item_id', 'uuid', (col) => col.notNull())
    // Null: unavailable until cleared.
    .addColumn('until', 'timestamptz')
    .addPrimaryKeyConstraint('item_availability_overrides_pkey', ['store_id', 'item_id'])
    .execute();
  await db.schema
    .alterTable('stores')
    .addColumn('item_availability_version', 'bigint', (col) => col.notNull().defaultTo(0))
    // The store's last store event (every kind): one sequence per store.
    .addColumn('event_version', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  await createOutboxTable(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('outbox').execute();
  await db.schema
    .alterTable('stores')
    .dropColumn('item_availability_version')
    .dropColumn('event_version')
    .execute();
  await db.schema.dropTable('item_availability_overrides').execute();
}
