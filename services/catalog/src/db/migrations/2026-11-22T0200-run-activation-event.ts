import type { Kysely } from 'kysely';

/** The outbox event a run's activation wrote; the status shows succeeded once it is published. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ingest_runs').addColumn('activation_event_id', 'uuid').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ingest_runs').dropColumn('activation_event_id').execute();
}
