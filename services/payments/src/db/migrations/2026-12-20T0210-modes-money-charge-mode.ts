import { sql, type Kysely } from 'kysely';

/**
 * Test mode (docs/guide/payments.md#test-mode-payments): each card and charge keeps the mode
 * it was made in, so everything done with it later, background jobs included, goes to that
 * mode's processor (the sandbox for test). Rows from before modes are live.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['cards', 'charges']) {
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
  for (const table of ['cards', 'charges']) {
    await db.schema.alterTable(table).dropColumn('mode').execute();
  }
}
