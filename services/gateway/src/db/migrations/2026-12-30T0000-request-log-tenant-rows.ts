import { sql, type Kysely } from 'kysely';

/**
 * How many requests the log holds per tenant, kept exact by statement triggers whoever writes
 * or deletes, so each replica's INSERT can trim its tenants to the cap in the same transaction
 * (docs/guide/requests.md#retention) without counting the tenant's rows. The counter's row
 * lock also serialises the writes of one tenant across replicas.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('request_log_tenant_rows')
    .addColumn('tenant_id', 'uuid', (col) => col.primaryKey())
    .addColumn('row_count', 'bigint', (col) => col.notNull())
    .execute();
  // Tenants in a fixed order, so concurrent statements lock their counters without deadlock.
  await sql`
    create function request_log_count_inserted() returns trigger language plpgsql
    set search_path from current as $$
    begin
      insert into request_log_tenant_rows (tenant_id, row_count)
        select tenant_id, count(*) from inserted group by tenant_id order by tenant_id
      on conflict (tenant_id)
        do update set row_count = request_log_tenant_rows.row_count + excluded.row_count;
      return null;
    end $$`.execute(db);
  await sql`
    create function request_log_count_deleted() returns trigger language plpgsql
    set search_path from current as $$
    begin
      update request_log_tenant_rows counted set row_count = counted.row_count - gone.n
        from (select tenant_id, count(*) as n from deleted group by tenant_id order by tenant_id)
          as gone
        where counted.tenant_id = gone.tenant_id;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger request_log_count_inserted after insert on request_log
    referencing new table as inserted for each statement
    execute function request_log_count_inserted()`.execute(db);
  await sql`
    create trigger request_log_count_deleted after delete on request_log
    referencing old table as deleted for each statement
    execute function request_log_count_deleted()`.execute(db);
  // The rows already there; the triggers (in this transaction) count every later one.
  await sql`lock table request_log in share row exclusive mode`.execute(db);
  await sql`
    insert into request_log_tenant_rows (tenant_id, row_count)
      select tenant_id, count(*) from request_log group by tenant_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger request_log_count_deleted on request_log`.execute(db);
  await sql`drop trigger request_log_count_inserted on request_log`.execute(db);
  await sql`drop function request_log_count_deleted()`.execute(db);
  await sql`drop function request_log_count_inserted()`.execute(db);
  await db.schema.dropTable('request_log_tenant_rows').execute();
}
