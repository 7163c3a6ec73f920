import { sql, type Kysely } from 'kysely';

/**
 * When the fixture stores' next occasional store event is due
 * (docs/guide/sandbox.md#store-events): one row, claimed by whichever replica finds it due (FOR
 * UPDATE SKIP LOCKED); `turn` picks the store and the kind of event, round robin.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table fixture_store_events (
    id smallint primary key default 1 check (id = 1),
    next_at timestamptz not null,
    turn integer not null default 0 check (turn >= 0)
  )`.execute(db);
  // The first one a default interval after the platform first starts.
  await sql`insert into fixture_store_events (next_at) values (now() + interval '10 minutes')`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('fixture_store_events').execute();
}
