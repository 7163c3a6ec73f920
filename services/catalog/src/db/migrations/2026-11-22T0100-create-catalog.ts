import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('ingest_runs')
    .addColumn('run_id', 'uuid', (col) => col.primaryKey())
    .addColumn('store_id', 'uuid', (col) => col.notNull())
    .addColumn('partner_id', 'uuid', (col) => col.notNull())
    .addColumn('callback_url', 'text', (col) => col.notNull())
    .addColumn('currency', 'char(3)', (col) => col.notNull())
    .addColumn('sequence', 'bigint', (col) => col.notNull().generatedAlwaysAsIdentity())
    .addColumn('status', 'text', (col) =>
      col
        .notNull()
        .check(sql`status in ('queued', 'pulling', 'processing', 'succeeded', 'failed')`),
    )
    .addColumn('errors', 'jsonb', (col) => col.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('summary', 'jsonb')
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    .addColumn('published_at', 'timestamptz')
    .addColumn('version_id', 'uuid')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  // The reconciler looks only at runs that are not finished.
  await db.schema
    .createIndex('ingest_runs_unfinished_idx')
    .on('ingest_runs')
    .column('updated_at')
    .where(sql.ref('status'), 'in', sql`('queued', 'pulling', 'processing')`)
    .execute();

  await db.schema
    .createTable('catalog_versions')
    .addColumn('version_id', 'uuid', (col) => col.primaryKey())
    .addColumn('store_id', 'uuid', (col) => col.notNull())
    .addColumn('run_id', 'uuid', (col) => col.notNull())
    .addColumn('sequence', 'bigint', (col) => col.notNull())
    .addColumn('catalog_set_id', 'uuid', (col) => col.notNull())
    .addColumn('currency', 'char(3)', (col) => col.notNull())
    .addColumn('etag', 'text', (col) => col.notNull())
    .addColumn('document', 'text', (col) => col.notNull())
    .addColumn('prices', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('catalog_versions_store_idx')
    .on('catalog_versions')
    .columns(['store_id', 'sequence'])
    .execute();

  await db.schema
    .createTable('active_catalogs')
    .addColumn('store_id', 'uuid', (col) => col.primaryKey())
    .addColumn('version_id', 'uuid', (col) =>
      col.notNull().references('catalog_versions.version_id'),
    )
    .addColumn('sequence', 'bigint', (col) => col.notNull())
    .addColumn('activated_at', 'timestamptz', (col) => col.notNull())
    .execute();

  // The outbox as it was first made (a migration never changes); 2026-11-25 reshapes it.
  await db.schema
    .createTable('outbox')
    .addColumn('event_id', 'uuid', (col) => col.primaryKey())
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('payload', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('published_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('outbox_unpublished_idx')
    .on('outbox')
    .column('created_at')
    .where(sql.ref('published_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['outbox', 'active_catalogs', 'catalog_versions', 'ingest_runs']) {
    await db.schema.dropTable(table).execute();
  }
}
