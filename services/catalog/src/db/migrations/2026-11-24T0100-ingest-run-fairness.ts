import { sql, type Kysely } from 'kysely';

const UNFINISHED = sql`('queued', 'pulling', 'processing')`;

/**
 * Runs over their partner's cap wait in Postgres (`parked_at`) instead of in JetStream; a
 * run remembers when it first showed `processing` (its status while the activation event
 * waits). The indexes serve the per-partner cap and the per-store supersede at notify time.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('ingest_runs')
    .addColumn('parked_at', 'timestamptz')
    .addColumn('processing_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('ingest_runs_partner_unfinished_idx')
    .on('ingest_runs')
    .columns(['partner_id', 'sequence'])
    .where(sql.ref('status'), 'in', UNFINISHED)
    .execute();
  await db.schema
    .createIndex('ingest_runs_store_queued_idx')
    .on('ingest_runs')
    .columns(['store_id', 'sequence'])
    .where(sql.ref('status'), '=', 'queued')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('ingest_runs_store_queued_idx').execute();
  await db.schema.dropIndex('ingest_runs_partner_unfinished_idx').execute();
  await db.schema
    .alterTable('ingest_runs')
    .dropColumn('processing_at')
    .dropColumn('parked_at')
    .execute();
}
