import { sql, type Kysely } from 'kysely';

/**
 * The fixture kitchen's scan (docs/guide/sandbox.md#the-kitchen): open orders of the fixture
 * stores, by when they last moved. Its schedule is the orders themselves: each step is due a
 * fixed time after the order's last change. The uuid is the platform's test tenant
 * (`fixtureCommercePartnerId`), written out: a migration does not follow later code.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('orders_fixture_kitchen_idx')
    .on('orders')
    .column('updated_at')
    .where(
      sql<boolean>`store_partner_id = '00000000-0000-4000-8000-00000000f1c5' and state = 'open'`,
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('orders_fixture_kitchen_idx').execute();
}
