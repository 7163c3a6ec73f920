import { sql, type Kysely } from 'kysely';

/**
 * The last versions of each deleted store id (docs/guide/sandbox.md#reset): a store created
 * again with that id, by anyone and in either mode (store ids are one key space), continues
 * from them, so its events never repeat a version ordering has recorded for that id. One row
 * per id, replaced when the id's store is deleted again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table deleted_store_versions (
    store_id uuid primary key,
    event_version bigint not null,
    profile_version bigint not null,
    item_availability_version bigint not null,
    deleted_at timestamptz not null default now()
  )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('deleted_store_versions').execute();
}
