import { sql, type Kysely } from 'kysely';

/**
 * The items that ran out with a store's denial (docs/guide/orders.md#denying-an-order), kept
 * with the cancel's row of the status history so the order's timeline shows them. Null on
 * every other change, and on denials recorded before this column.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('order_status_changes')
    .addColumn('unavailable_item_ids', sql`uuid[]`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('order_status_changes').dropColumn('unavailable_item_ids').execute();
}
