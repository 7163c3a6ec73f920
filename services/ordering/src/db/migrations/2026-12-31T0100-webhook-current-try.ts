import { sql, type Kysely } from 'kysely';

/**
 * A delivery's latest try lives on its row (with `last_attempt_at` and `last_response_status`,
 * which the settle already wrote); `webhook_delivery_attempts` keeps only the tries a later try
 * superseded, so a delivery delivered at its first try writes no second row. The readers add
 * the current try back, so the attempt log reads as before (docs/guide/webhooks.md).
 * The attempts lose their per-row foreign key (a trigger and a row lock per try): the
 * retention prune and the sandbox reset delete a delivery's tries with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('webhook_deliveries')
    // The current try's count, outcome, error and latency: what resend and a postponement
    // (a try the open breaker held back) change on the row does not change the try.
    .addColumn('last_try_attempt', 'integer')
    .addColumn('last_try_outcome', 'text', (col) =>
      col.check(sql`last_try_outcome in ('delivered', 'failed', 'dead')`),
    )
    .addColumn('last_try_error', 'text')
    .addColumn('last_latency_ms', 'integer')
    .execute();
  await sql`
    alter table webhook_delivery_attempts
      drop constraint webhook_delivery_attempts_delivery_id_fkey`.execute(db);
  // Each delivery's latest try moves onto its row, so it is not listed twice.
  await sql`
    with latest as (
      delete from webhook_delivery_attempts attempt
       using (select distinct on (delivery_id) delivery_id, attempt_id
                from webhook_delivery_attempts
               order by delivery_id, attempt_id desc) newest
       where attempt.delivery_id = newest.delivery_id and attempt.attempt_id = newest.attempt_id
      returning attempt.*
    )
    update webhook_deliveries delivery
       set last_try_attempt = latest.attempt,
           last_try_outcome = latest.outcome,
           last_try_error = latest.error,
           last_latency_ms = latest.latency_ms,
           last_attempt_at = latest.tried_at,
           last_response_status = latest.response_status
      from latest
     where delivery.delivery_id = latest.delivery_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into webhook_delivery_attempts
           (delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at)
    select delivery_id, last_try_attempt, last_try_outcome, last_response_status,
           last_latency_ms, last_try_error, last_attempt_at
      from webhook_deliveries
     where last_try_outcome is not null`.execute(db);
  // Tries whose delivery is gone (pruned) cannot keep a foreign key.
  await sql`
    delete from webhook_delivery_attempts attempt
     where not exists (select 1 from webhook_deliveries delivery
                        where delivery.delivery_id = attempt.delivery_id)`.execute(db);
  await sql`
    alter table webhook_delivery_attempts
      add constraint webhook_delivery_attempts_delivery_id_fkey
      foreign key (delivery_id) references webhook_deliveries (delivery_id) on delete cascade`.execute(
    db,
  );
  await db.schema
    .alterTable('webhook_deliveries')
    .dropColumn('last_try_attempt')
    .dropColumn('last_try_outcome')
    .dropColumn('last_try_error')
    .dropColumn('last_latency_ms')
    .execute();
}
