import { sql, type Kysely } from 'kysely';

/**
 * A webhook endpoint is of its partner's mode (docs/guide/sandbox.md#modes): a store event goes
 * only to endpoints of its store's mode. Endpoints registered before modes are live.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('webhook_endpoints')
    .addColumn('mode', 'text', (col) =>
      col
        .notNull()
        .defaultTo('live')
        .check(sql`mode in ('live', 'test')`),
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').dropColumn('mode').execute();
}
