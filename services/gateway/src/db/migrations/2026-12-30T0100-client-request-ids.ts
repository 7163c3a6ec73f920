import type { Kysely } from 'kysely';

/**
 * The partner's own X-Request-Id beside the request's id (docs/guide/requests.md): the id is
 * always the platform's, the partner's value is kept for its correlation.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_log').addColumn('client_request_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_log').dropColumn('client_request_id').execute();
}
