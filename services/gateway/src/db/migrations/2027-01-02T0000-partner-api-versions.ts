import { sql, type Kysely } from 'kysely';

/**
 * Every partner is pinned to a dated API version (docs/guide/requests.md#api-version). The
 * partners that exist now built against the API of 2026-12-01, so that is their pin; written
 * here as text, not the contracts' constant, so the migration means the same forever. There
 * is no default: whoever creates a partner pins it to the newest version of its own code.
 * The check is the shape of a version, not the list, which grows without a migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('partners')
    .addColumn('api_version', 'text', (col) =>
      col.check(sql`api_version ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`),
    )
    .execute();
  await sql`update partners set api_version = '2026-12-01' where api_version is null`.execute(db);
  await db.schema
    .alterTable('partners')
    .alterColumn('api_version', (col) => col.setNotNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('partners').dropColumn('api_version').execute();
}
