import { sql, type Kysely } from 'kysely';

/**
 * A webhook endpoint has its own API version: its deliveries are rendered in it
 * (docs/guide/webhooks.md#api-version). The endpoints that exist now were registered against
 * the API of 2026-12-01, so that is theirs; written here as text, not the contracts' constant,
 * so the migration means the same forever. The default stays: an endpoint written by an
 * ordering of before versions (a rolling deploy) was written in 2026-12-01 too. The check is
 * the shape of a version, not the list, which grows without a migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('webhook_endpoints')
    .addColumn('api_version', 'text', (col) =>
      col
        .notNull()
        .defaultTo('2026-12-01')
        .check(sql`api_version ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`),
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').dropColumn('api_version').execute();
}
