import { sql, type Kysely } from 'kysely';

/**
 * When an order's store was deleted while the order stayed (a sandbox reset of the store's
 * owner keeps other partners' orders; docs/guide/sandbox.md#reset): from then on no store-side
 * read or move sees the order, whoever owns that store id next. Null while the store exists.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('store_deleted_at', sql`timestamptz`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('orders').dropColumn('store_deleted_at').execute();
}
