import type { Kysely } from 'kysely';

/**
 * The store catalog's aggregate version of the last activation applied: events apply only
 * over an older version (activation times of different catalog replicas do not order them).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('stores').addColumn('catalog_version', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('stores').dropColumn('catalog_version').execute();
}
