import type { Kysely } from 'kysely';

/** A suspended partner's keys authenticate as revoked ones do, until it is resumed. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('partners').addColumn('suspended_at', 'timestamptz').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('partners').dropColumn('suspended_at').execute();
}
