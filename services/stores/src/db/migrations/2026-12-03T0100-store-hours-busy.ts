import { sql, type Kysely } from 'kysely';

/**
 * Store operations (docs/guide/stores.md): special days replacing the weekly hours on their
 * dates, the busy status with its extra preparation minutes, who set a pause (the partner,
 * or the platform after orders were not accepted in time) and the acceptance window.
 * Existing pauses were set by their partners.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table stores
    add column special_days jsonb not null default '[]'::jsonb,
    add column extra_prep_minutes integer,
    add column paused_by text,
    add column acceptance_window_seconds integer not null default 600`.execute(db);
  await sql`update stores set paused_by = 'partner' where status = 'paused'`.execute(db);
  await sql`alter table stores drop constraint stores_status_check`.execute(db);
  await sql`alter table stores
    add constraint stores_status_check check (status in ('online', 'paused', 'busy')),
    add constraint stores_special_days_array check (jsonb_typeof(special_days) = 'array'
      and jsonb_array_length(special_days) <= 366),
    add constraint stores_extra_prep_minutes_busy check (
      (status = 'busy') = (extra_prep_minutes is not null)
      and (extra_prep_minutes is null or extra_prep_minutes between 5 and 120)),
    add constraint stores_paused_by_paused check (
      (status = 'paused') = (paused_by is not null)
      and (paused_by is null or paused_by in ('partner', 'platform'))),
    add constraint stores_acceptance_window_range check (
      acceptance_window_seconds between 60 and 3600)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // A busy store reads as online without its busy columns.
  await sql`update stores set status = 'online', paused_at = null, resume_at = null,
    extra_prep_minutes = null
    where status = 'busy'`.execute(db);
  await sql`alter table stores
    drop constraint stores_acceptance_window_range,
    drop constraint stores_paused_by_paused,
    drop constraint stores_extra_prep_minutes_busy,
    drop constraint stores_special_days_array,
    drop constraint stores_status_check`.execute(db);
  await sql`alter table stores add constraint stores_status_check
    check (status in ('online', 'paused'))`.execute(db);
  await sql`alter table stores
    drop column acceptance_window_seconds,
    drop column paused_by,
    drop column extra_prep_minutes,
    drop column special_days`.execute(db);
}
