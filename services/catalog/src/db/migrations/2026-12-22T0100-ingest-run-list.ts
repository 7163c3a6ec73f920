import { sql, type Kysely } from 'kysely';

/**
 * A store's ingest runs as a list (docs/guide/catalogs.md#listing-ingests): when each run was
 * first taken up by a worker, and the list's keyset, newest first. Runs taken up before this
 * start when they first showed `processing`, the earliest time they kept.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ingest_runs').addColumn('started_at', 'timestamptz').execute();
  await sql`update ingest_runs set started_at = processing_at where attempts > 0`.execute(db);
  await db.schema
    .createIndex('ingest_runs_store_created_idx')
    .on('ingest_runs')
    .columns(['store_id', 'created_at desc', 'run_id desc'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('ingest_runs_store_created_idx').execute();
  await db.schema.alterTable('ingest_runs').dropColumn('started_at').execute();
}
