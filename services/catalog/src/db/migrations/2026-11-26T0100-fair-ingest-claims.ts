import { sql, type Kysely } from 'kysely';

/**
 * When each partner's run last started, so the next run to start goes to the partner served
 * least recently (docs/guide/catalogs.md#ingest). Runs queued before this migration join the fair
 * queue (`parked_at`) as every run does now at notify time; finished runs can be pruned by
 * age, oldest first.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('ingest_partner_turns')
    .addColumn('partner_id', 'uuid', (col) => col.primaryKey())
    .addColumn('last_claimed_at', 'timestamptz', (col) => col.notNull())
    .execute();
  await sql`update ingest_runs set parked_at = created_at
            where status = 'queued' and parked_at is null and lease_expires_at is null`.execute(db);
  await db.schema
    .createIndex('ingest_runs_finished_updated_idx')
    .on('ingest_runs')
    .column('updated_at')
    .where(sql.ref('status'), 'in', sql`('succeeded', 'failed')`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('ingest_runs_finished_updated_idx').execute();
  await db.schema.dropTable('ingest_partner_turns').execute();
}
