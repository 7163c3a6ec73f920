// Webhook deliveries settled: each try's outcome recorded, the versions waiting behind a
// finished one woken, and settled rows pruned after their retention.
import { runPrepared } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';

import type { OrderingDatabase } from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** How a try ended, as its delivery records it; `latencyMs` from its request to its answer. */
export type TryOutcome =
  /** No try was made (the partner's breaker is open): the delivery waits `delayMs`. */
  | { kind: 'postponed'; delayMs: number; error: string }
  /**
   * No try is made, ever: the endpoint's API version does not know the event. The row is
   * `skipped` (not the partner's: unlisted), so its sequence goes on.
   */
  | { kind: 'skipped'; error: string }
  | { kind: 'delivered'; attempts: number; status: number; latencyMs: number }
  /** The schedule is spent, or the endpoint is gone. */
  | { kind: 'dead'; attempts: number; status: number | null; error: string; latencyMs: number }
  /** Tried again in `delayMs`. */
  | {
      kind: 'retry';
      attempts: number;
      delayMs: number;
      status: number | null;
      error: string;
      latencyMs: number;
    };

/** One try's outcome, for the lease that made it. */
export interface Settlement {
  deliveryId: string;
  /** The lease_owner the claim gave this try. */
  holder: string;
  outcome: TryOutcome;
}

/** The columns of one settlement, as `settleDeliveries` reads them from its arrays. */
function settlementColumns({ deliveryId, holder, outcome }: Settlement) {
  const tried = outcome.kind !== 'postponed' && outcome.kind !== 'skipped';
  return {
    deliveryId,
    holder,
    tried,
    // postponed keeps its status; retry leaves it failed.
    status: {
      postponed: null,
      skipped: 'skipped',
      delivered: 'delivered',
      dead: 'dead',
      retry: 'failed',
    }[outcome.kind],
    attempts: tried ? outcome.attempts : null,
    responseStatus: tried ? outcome.status : null,
    latencyMs: tried ? Math.round(outcome.latencyMs) : null,
    // null: no next try (delivered, dead).
    delayMs: outcome.kind === 'postponed' || outcome.kind === 'retry' ? outcome.delayMs : null,
    error: outcome.kind === 'delivered' ? null : outcome.error,
  };
}

/**
 * Record how tries went, many in one statement, each as the holder of its lease (a lapsed
 * lease writes nothing: its delivery is claimed again once the lease is over, at least once).
 * Every try made is kept (an order's timeline, a delivery's tries): the latest on the delivery's
 * row, and the one it supersedes as an attempt row, so a first try writes no second row. A
 * delivery that is over (delivered, dead, skipped) makes the next open version of its sequence due. A
 * sequence has one version leased at a time, so a batch holds at most one of each. A skipped
 * delivery (its endpoint's version does not know the event) is over untried, and unlisted.
 */
export async function settleDeliveries(db: Db, settlements: readonly Settlement[]): Promise<void> {
  const rows = settlements.map(settlementColumns);
  const column = <T>(pick: (row: (typeof rows)[number]) => T) => rows.map(pick);
  await runPrepared(
    db as Kysely<unknown>,
    // An outcome lost in a database crash only means another try (at least once: the
    // webhook-id lets the partner drop it), so this commit does not wait for the WAL flush,
    // the cost that bounds the dispatchers otherwise. The recorder's commit does wait: the
    // event is acked after it.
    sql`
    with relaxed as (
      select set_config('synchronous_commit', 'off', true) as setting
    ), outcome as (
      select *
        from unnest(${column((row) => row.deliveryId)}::uuid[], ${column((row) => row.holder)}::text[],
                    ${column((row) => row.tried)}::boolean[],
                    ${column((row) => row.status)}::text[], ${column((row) => row.attempts)}::int[],
                    ${column((row) => row.responseStatus)}::int[],
                    ${column((row) => row.latencyMs)}::int[],
                    ${column((row) => row.delayMs)}::float8[], ${column((row) => row.error)}::text[])
             as outcome(delivery_id, holder, tried, status, attempts, response_status, latency_ms,
                        delay_ms, error)
    ), settled as (
      update webhook_deliveries d
         set status = coalesce(outcome.status, d.status),
             attempts = coalesce(outcome.attempts, d.attempts),
             last_attempt_at = case when outcome.tried then now() else d.last_attempt_at end,
             last_response_status = case when outcome.tried then outcome.response_status
                                         else d.last_response_status end,
             last_error = outcome.error,
             last_try_attempt = case when outcome.tried then outcome.attempts
                                     else d.last_try_attempt end,
             last_try_outcome = case when outcome.tried then outcome.status
                                     else d.last_try_outcome end,
             last_try_error = case when outcome.tried then outcome.error
                                   else d.last_try_error end,
             last_latency_ms = case when outcome.tried then outcome.latency_ms
                                    else d.last_latency_ms end,
             next_attempt_at = now() + outcome.delay_ms * interval '1 millisecond',
             delivered_at = case when outcome.status = 'delivered' then now() else d.delivered_at end,
             lease_owner = null,
             lease_expires_at = null,
             updated_at = now()
        -- The row as it was before this statement (its snapshot): the try a new one supersedes.
        -- Only this lease's settle writes a try, so nothing changed it since.
        from outcome join webhook_deliveries prior on prior.delivery_id = outcome.delivery_id
       where d.delivery_id = outcome.delivery_id and d.lease_owner = outcome.holder
         and (select setting from relaxed) is not null
      returning d.sequence_key, d.version, d.status, d.delivery_id, outcome.tried,
                prior.last_try_attempt, prior.last_try_outcome, prior.last_try_error,
                prior.last_latency_ms, prior.last_response_status, prior.last_attempt_at
    ), superseded as (
      insert into webhook_delivery_attempts
             (delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at)
      select delivery_id, last_try_attempt, last_try_outcome, last_response_status,
             last_latency_ms, last_try_error, last_attempt_at
        from settled
       where tried and last_try_outcome is not null
    )
    -- One uncorrelated lookup of each sequence's next open version (the open-versions index),
    -- then its row by key: never a scan of every waiting row.
    update webhook_deliveries next
       set next_attempt_at = now()
      from settled
     where settled.status in ('delivered', 'dead', 'skipped')
       and next.delivery_id = (
             select open.delivery_id from webhook_deliveries open
              where open.sequence_key = settled.sequence_key and open.version > settled.version
                and open.status in ('pending', 'failed')
              order by open.version limit 1)
       and next.status = 'pending' and next.next_attempt_at is null
  `.compile(db),
  );
}

/**
 * Make due the waiting versions whose sequence has no open earlier version any more: the wake
 * a settle gives is lost if the version was recorded meanwhile (both in flight at once).
 */
export async function wakeWaitingDeliveries(db: Db, olderThanMs: number): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries as waiting')
    .set({ next_attempt_at: sql<Date>`now()` })
    .where('waiting.status', '=', 'pending')
    .where('waiting.next_attempt_at', 'is', null)
    .where('waiting.created_at', '<', sql<Date>`now() - ${olderThanMs} * interval '1 millisecond'`)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as earlier')
            .select(sql.lit(1).as('one'))
            .whereRef('earlier.sequence_key', '=', 'waiting.sequence_key')
            .whereRef('earlier.version', '<', 'waiting.version')
            .where('earlier.status', 'in', ['pending', 'failed']),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Delivered and skipped rows recorded before the retention are no longer needed, with their
 * superseded tries, nor the store events no row reads any more.
 */
export async function pruneSettledDeliveries(db: Db, retentionMs: number): Promise<void> {
  const before = sql<Date>`now() - ${retentionMs} * interval '1 millisecond'`;
  await db
    .with('pruned', (db) =>
      db
        .deleteFrom('webhook_deliveries')
        .where('created_at', '<', before)
        .where('status', 'in', ['delivered', 'skipped'])
        .returning('delivery_id'),
    )
    .deleteFrom('webhook_delivery_attempts')
    .where('delivery_id', 'in', (eb) => eb.selectFrom('pruned').select('pruned.delivery_id'))
    .execute();
  await db
    .deleteFrom('webhook_store_events as event')
    .where('event.created_at', '<', before)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as delivery')
            .select(sql.lit(1).as('one'))
            .whereRef('delivery.event_id', '=', 'event.event_id'),
        ),
      ),
    )
    .execute();
}
