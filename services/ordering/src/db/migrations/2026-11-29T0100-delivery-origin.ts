import type { Kysely } from 'kysely';

// The request an order event came from (trace context, request and partner ids), so each
// webhook try continues that request's trace whichever replica sends it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').addColumn('origin', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').dropColumn('origin').execute();
}
