import type { Kysely } from 'kysely';

/**
 * The store's profile version: one more with every profile change no store event announces
 * (`events.stores.v1.profile-changed`, ordering's profile caches' cue), its own sequence so
 * the store events partners see keep theirs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('stores')
    .addColumn('profile_version', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('stores').dropColumn('profile_version').execute();
}
