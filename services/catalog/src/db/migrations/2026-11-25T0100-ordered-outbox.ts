import { createOutboxPendingIndex } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';

/**
 * The outbox publishes in a sequence taken after the store's activation lock, one event per
 * version of the store's catalog (`active_catalogs.version`), parking rows that can never
 * be published. Rows written before this migration become versions of a `legacy` aggregate
 * of their own; they keep their ids.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('active_catalogs')
    .addColumn('version', 'bigint', (col) => col.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('active_catalogs')
    .alterColumn('version', (col) => col.dropDefault())
    .execute();

  await db.schema.dropIndex('outbox_unpublished_idx').execute();
  await sql`alter table outbox drop constraint outbox_pkey`.execute(db);
  // Identity values of existing rows follow their creation order.
  await sql`
    alter table outbox
      add column sequence bigint generated always as identity,
      add column aggregate_type text,
      add column aggregate_id text,
      add column aggregate_version bigint,
      add column parked_at timestamptz,
      add column park_reason text
  `.execute(db);
  await sql`
    update outbox
    set aggregate_type = 'legacy', aggregate_id = event_id::text, aggregate_version = 1
  `.execute(db);
  await sql`
    alter table outbox
      alter column aggregate_type set not null,
      alter column aggregate_id set not null,
      alter column aggregate_version set not null,
      add primary key (sequence),
      add constraint outbox_event_id_key unique (event_id),
      add constraint outbox_aggregate_version_key
        unique (aggregate_type, aggregate_id, aggregate_version)
  `.execute(db);
  await createOutboxPendingIndex(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('outbox_pending_idx').execute();
  await sql`
    alter table outbox
      drop constraint outbox_pkey,
      drop constraint outbox_event_id_key,
      drop constraint outbox_aggregate_version_key,
      drop column sequence,
      drop column aggregate_type,
      drop column aggregate_id,
      drop column aggregate_version,
      drop column parked_at,
      drop column park_reason,
      add primary key (event_id)
  `.execute(db);
  await sql`create index outbox_unpublished_idx on outbox (created_at) where published_at is null`.execute(
    db,
  );
  await db.schema.alterTable('active_catalogs').dropColumn('version').execute();
}
