import { sql, type Kysely } from 'kysely';

/**
 * Live and test mode (docs/guide/sandbox.md#modes): every partner gets its test tenant's id,
 * and every key a mode. Keys made before this are live.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('partners')
    .addColumn('test_partner_id', 'uuid', (col) =>
      col
        .notNull()
        .unique()
        .defaultTo(sql`gen_random_uuid()`),
    )
    .execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('mode', 'text', (col) =>
      col
        .notNull()
        .defaultTo('live')
        .check(sql`mode in ('live', 'test')`),
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('mode').execute();
  await db.schema.alterTable('partners').dropColumn('test_partner_id').execute();
}
