import { type Kysely } from 'kysely';

/**
 * The SHA-256 of a place request's body bytes beside its canonical fingerprint: a retry with
 * the very same bytes replays without being parsed. Rows from before keep null and replay by
 * their fingerprint.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('place_attempts').addColumn('raw_hash', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('place_attempts').dropColumn('raw_hash').execute();
}
