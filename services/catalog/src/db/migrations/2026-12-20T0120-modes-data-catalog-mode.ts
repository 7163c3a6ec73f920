import { sql, type Kysely } from 'kysely';

/**
 * A store's catalog is of its store's mode (docs/guide/sandbox.md#modes): a run takes the mode
 * of the notification that made it, and the version it activates keeps it, so readers of
 * another mode find no catalog. Runs and versions made before modes are live.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['ingest_runs', 'catalog_versions']) {
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
  for (const table of ['ingest_runs', 'catalog_versions']) {
    await db.schema.alterTable(table).dropColumn('mode').execute();
  }
}
