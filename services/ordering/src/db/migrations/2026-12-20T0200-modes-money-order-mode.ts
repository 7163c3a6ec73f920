import { sql, type Kysely } from 'kysely';

/**
 * Test mode (docs/guide/payments.md#test-mode-payments): a place attempt and its order keep the
 * mode of the request that placed it, so everything ordering asks payments for the order later
 * (capture, release, refunds, also from the sweepers) goes to that mode's processor. Rows from
 * before modes are live.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['place_attempts', 'orders']) {
    await db.schema
      .alterTable(table)
      .addColumn('mode', 'text', (col) =>
        col
          .notNull()
          .defaultTo('live')
          .check(sql`mode in ('live', 'test')`),
      )
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['place_attempts', 'orders']) {
    await db.schema.alterTable(table).dropColumn('mode').execute();
  }
}
