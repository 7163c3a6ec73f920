import type { Kysely } from 'kysely';

/**
 * The API version each request was read and answered in (docs/guide/versioning.md): what
 * finds the calls still made in a version about to go. Null for requests logged before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_log').addColumn('api_version', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_log').dropColumn('api_version').execute();
}
