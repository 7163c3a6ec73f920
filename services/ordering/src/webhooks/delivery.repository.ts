import type {
  OrderEventKind,
  PartnerMode,
  StoreEventKind,
  WebhookDeliveriesQuery,
} from '@pcp/contracts';
import {
  createdAtKey,
  olderThan,
  pageOf,
  preparedTransaction,
  runPrepared,
  type ListKey,
} from '@pcp/service-kit';
import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely';

import type {
  OrderingDatabase,
  WebhookDeliveryAttemptRow,
  WebhookDeliveryRow,
} from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** An order event as the recorder got it. */
export interface OrderEventDelivery {
  deliveryId: string;
  eventId: string;
  partnerId: string;
  orderId: string;
  storeId: string;
  version: number;
  eventType: OrderEventKind;
  payload: string;
  occurredAt: Date;
  /** The request the event came from (`storedOrigin`), or null. */
  origin: string | null;
}

/** What a recording did: the new row's state (undefined: recorded before), and whether it streamed. */
export interface Recorded {
  state: 'due' | 'waiting' | 'skipped' | undefined;
  /** Appended to the partner's webhook stream log (it has opened a stream). */
  streamed: boolean;
}

/** Order events recorded by one statement at most. */
export const RECORD_BATCH = 64;

/**
 * Record order events once each, in one statement (at most `RECORD_BATCH` of them, each of
 * its own order and version): `pending` when the partner's enabled endpoint subscribes to its
 * kind (due now, or waiting while an earlier version of its order is open, in the table or
 * earlier in the batch), `skipped` otherwise. A redelivered event finds its row and adds
 * nothing; the state of each new row is returned, in the events' order. A new row of a
 * partner with a webhook stream is also appended to its stream log (`streamKeep` events
 * kept), in the events' order, in the same statement.
 */
export async function recordDeliveries(
  db: Db,
  events: readonly OrderEventDelivery[],
  streamKeep: number,
): Promise<Recorded[]> {
  const column = <T>(pick: (event: OrderEventDelivery) => T) => events.map(pick);
  const rows = await runPrepared<{
    delivery_id: string;
    status: string;
    next_attempt_at: Date | null;
    streamed: boolean;
  }>(
    db as Kysely<unknown>,
    sql`
    with input as (
      select input.*,
             exists (select 1 from webhook_endpoints e
                      where e.partner_id = input.partner_id and e.disabled_at is null
                        and input.event_type = any(e.events)) as subscribed
        from unnest(${column((e) => e.deliveryId)}::uuid[], ${column((e) => e.eventId)}::uuid[],
                    ${column((e) => e.partnerId)}::uuid[], ${column((e) => e.orderId)}::uuid[],
                    ${column((e) => e.storeId)}::uuid[], ${column((e) => e.version)}::int[],
                    ${column((e) => e.eventType)}::text[], ${column((e) => e.payload)}::text[],
                    ${column((e) => e.occurredAt)}::timestamptz[], ${column((e) => e.origin)}::text[])
             with ordinality
             as input(delivery_id, event_id, partner_id, order_id, store_id, version, event_type,
                      payload, occurred_at, origin, position)
    ), recorded as (
      insert into webhook_deliveries
        (delivery_id, event_id, partner_id, order_id, store_id, sequence_key, version, event_type,
         payload, status, next_attempt_at, occurred_at, origin)
      select i.delivery_id, i.event_id, i.partner_id, i.order_id, i.store_id, i.order_id::text,
             i.version, i.event_type, i.payload,
             case when i.subscribed then 'pending' else 'skipped' end,
             case when i.subscribed
                   and not exists (
                     select 1 from webhook_deliveries earlier
                      where earlier.sequence_key = i.order_id::text and earlier.version < i.version
                        and earlier.status in ('pending', 'failed'))
                   -- Rows of this statement are not in its snapshot: an earlier version in
                   -- the batch is open as well.
                   and not exists (
                     select 1 from input earlier
                      where earlier.order_id = i.order_id and earlier.version < i.version
                        and earlier.subscribed)
                  then now() end,
             i.occurred_at, i.origin
        from input i
       order by i.position
      on conflict (sequence_key, version) do nothing
      returning delivery_id, partner_id, event_id, event_type, payload, status, next_attempt_at
    ), ${streamAppend(
      sql`select recorded.partner_id, recorded.event_id::text as webhook_id,
                 recorded.event_type, recorded.payload as body, input.position
            from recorded join input using (delivery_id)`,
      streamKeep,
    )}
    select recorded.delivery_id, recorded.status, recorded.next_attempt_at,
           exists (select 1 from streamed where streamed.webhook_id = recorded.event_id::text)
             as streamed
      from recorded
  `.compile(db),
  );
  const byId = new Map(rows.map((row) => [row.delivery_id, row]));
  return events.map((event) => {
    const row = byId.get(event.deliveryId);
    if (!row) return { state: undefined, streamed: false };
    const { streamed } = row;
    if (row.status === 'skipped') return { state: 'skipped', streamed };
    return { state: row.next_attempt_at === null ? 'waiting' : 'due', streamed };
  });
}

/**
 * The CTEs `streamed` and `trimmed` of a recording statement: the events `source` selects
 * (partner_id, webhook_id, event_type, body, position) appended, by position, to the logs of
 * those partners that have a webhook stream, and each of those logs cut to its newest `keep`
 * (the appended ones among them: the cut is counted on the rows before them).
 */
function streamAppend(source: RawBuilder<unknown>, keep: number): RawBuilder<unknown> {
  return sql`streamed as (
      insert into webhook_stream_events (partner_id, webhook_id, event_type, body)
      select source.partner_id, source.webhook_id, source.event_type, source.body
        from (${source}) source
       where exists (select 1 from webhook_streams s where s.partner_id = source.partner_id)
       order by source.position
      returning partner_id, webhook_id
    ), cut as (
      select streamed.partner_id,
             (select kept.seq from webhook_stream_events kept
               where kept.partner_id = streamed.partner_id
               order by kept.seq desc offset greatest(${keep} - streamed.appended, 0)
               limit 1) as seq
        from (select partner_id, count(*) as appended from streamed group by partner_id) streamed
    ), trimmed as (
      delete from webhook_stream_events old
       using cut
       where old.partner_id = cut.partner_id and old.seq <= cut.seq
    )`;
}

/** A store event as the store-event recorder got it. */
export interface StoreEventDelivery {
  eventId: string;
  storeId: string;
  /** The store's event version. */
  version: number;
  eventType: StoreEventKind;
  /** The store's mode: only endpoints of this mode receive the event. */
  mode: PartnerMode;
  payload: string;
  occurredAt: Date;
  origin: string | null;
}

/** Partners given their rows by one statement of a fan-out. */
export const FAN_OUT_BATCH = 500;

/**
 * Record a store event once for every partner whose enabled endpoint, of the store's mode,
 * subscribes to its kind, in one transaction: its body and version mark (`webhook_store_events`), then one row per
 * partner, `FAN_OUT_BATCH` partners per statement. A row is due now, or waiting while an
 * earlier version of the store is still open for that partner. No `skipped` rows: a later
 * version waits for this one's mark, not for a row of each partner. A redelivered event finds
 * its mark and adds nothing (undefined); another event with its store and version is refused
 * (`version-taken`); else the partners given a row and how many of those rows are due now,
 * and those of them whose webhook stream log it was appended to.
 */
export function recordStoreEvent(
  db: Db,
  event: StoreEventDelivery,
  /** Events kept in each webhook stream log. */
  streamKeep: number,
  /** Called between statements (the consumer's `working()`). */
  progress: () => void = () => undefined,
): Promise<{ partners: number; due: number; streamed: string[] } | 'version-taken' | undefined> {
  return preparedTransaction(db as Kysely<unknown>, async (run) => {
    const marked = await run(
      sql`
      insert into webhook_store_events
        (event_id, store_id, version, event_type, payload, occurred_at, origin)
      values (${event.eventId}, ${event.storeId}, ${event.version}, ${event.eventType},
              ${event.payload}, ${event.occurredAt}, ${event.origin})
      on conflict do nothing
      returning event_id
    `.compile(db),
    );
    if (marked.length === 0) {
      const [recorded] = await run<{ event_id: string }>(
        sql`select event_id from webhook_store_events
             where store_id = ${event.storeId} and version = ${event.version}`.compile(db),
      );
      if (recorded?.event_id === event.eventId) return undefined;
      return 'version-taken';
    }
    let after = '00000000-0000-0000-0000-000000000000';
    let partners = 0;
    let due = 0;
    for (;;) {
      const [batch] = await run<{ last: string | null; partners: number; due: number }>(
        sql`
        with batch as (
          select partner_id, 'store:' || ${event.storeId}::text || ':' || partner_id as sequence_key
            from webhook_endpoints
           where partner_id > ${after} and disabled_at is null and ${event.eventType} = any(events)
             and mode = ${event.mode}
           order by partner_id
           limit ${FAN_OUT_BATCH}
        ), inserted as (
          insert into webhook_deliveries
            (delivery_id, event_id, partner_id, order_id, store_id, sequence_key, version,
             event_type, payload, status, next_attempt_at, occurred_at, origin)
          select gen_random_uuid(), ${event.eventId}, batch.partner_id, null, ${event.storeId},
                 batch.sequence_key, ${event.version}, ${event.eventType}, null, 'pending',
                 case when not exists (
                        select 1 from webhook_deliveries earlier
                         where earlier.sequence_key = batch.sequence_key
                           and earlier.version < ${event.version}
                           and earlier.status in ('pending', 'failed'))
                      then now() end,
                 ${event.occurredAt}, ${event.origin}
            from batch
          on conflict (sequence_key, version) do nothing
          returning next_attempt_at
        )
        select (select partner_id from batch order by partner_id desc limit 1) as last,
               (select count(*) from batch)::int as partners,
               (select count(*) from inserted where next_attempt_at is not null)::int as due
      `.compile(db),
      );
      if (!batch?.last) break;
      partners += batch.partners;
      due += batch.due;
      after = batch.last;
      if (batch.partners < FAN_OUT_BATCH) break;
      progress();
    }
    // The partners given a row that have a webhook stream get the event in their log too.
    const streamed = await run<{ partner_id: string }>(
      sql`
      with ${streamAppend(
        sql`select d.partner_id, ${event.eventId}::text as webhook_id,
                   ${event.eventType}::text as event_type, ${event.payload}::text as body,
                   1 as position
              from webhook_deliveries d
             where d.event_id = ${event.eventId}`,
        streamKeep,
      )}
      select distinct partner_id from streamed
    `.compile(db),
    );
    return { partners, due, streamed: streamed.map((row) => row.partner_id) };
  });
}

/** A claimed delivery with where and how to send it. */
export type ClaimedDelivery = WebhookDeliveryRow & {
  /** The bytes to send: the row's own payload, or its store event's. */
  body: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
};

/**
 * Lease up to `limit` due deliveries for this holder, order deliveries first: at most
 * `storeLimit` of them store deliveries, which never take an order delivery's place. A
 * delivery is due when its time has come, no earlier version of its sequence (its order; its
 * partner's view of its store) is still open (a version recorded behind an open one waits
 * without a time), its predecessor version has been recorded (an order's row, a store's event
 * mark; or `gapGraceMs` has passed: a version that never comes must not block the sequence
 * forever), its endpoint is enabled, and its partner has fewer than `perPartner` deliveries
 * leased. Order deliveries are looked for partner by partner (each partner's oldest due ones,
 * of partners below their cap), so a partner at its cap or in back-off costs the claim one
 * index probe however large its backlog, and never fills the claim's look with rows it cannot
 * take; store deliveries among their own `scanLimit` oldest due rows. Claims are serialized
 * across replicas by an advisory lock so the per-partner cap holds exactly; each is one short
 * statement.
 */
export function claimDueDeliveries(
  db: Db,
  claim: {
    holder: string;
    leaseMs: number;
    limit: number;
    /** Store deliveries among them at most. */
    storeLimit: number;
    /** Due rows of each kind taken into the pick at most, oldest first (the caps pick among them). */
    scanLimit: number;
    perPartner: number;
    gapGraceMs: number;
  },
): Promise<ClaimedDelivery[]> {
  const rowDue = sql`
         d.status in ('pending', 'failed')
           and d.next_attempt_at <= now()
           and (d.lease_expires_at is null or d.lease_expires_at <= now())
           and not exists (
             select 1 from webhook_deliveries earlier
              where earlier.sequence_key = d.sequence_key and earlier.version < d.version
                and earlier.status in ('pending', 'failed'))`;
  const graceOver = sql`d.created_at < now() - ${claim.gapGraceMs} * interval '1 millisecond'`;
  return preparedTransaction(db as Kysely<unknown>, async (run) => {
    // Its own statement: the claim's snapshot must be taken after the lock is held. A lease
    // lost in a database crash only means another try (at least once), so its commit does
    // not wait for the WAL flush. No bitmap scans: the lease count must walk a partner's due
    // rows in order and stop at its cap, not read all of a capped partner's backlog first (the
    // planner cannot know the leases come first).
    await run(
      sql`select pg_advisory_xact_lock(hashtextextended(current_schema() || '.webhook-claim', 0)),
                 set_config('synchronous_commit', 'off', true),
                 set_config('enable_bitmapscan', 'off', true)`.compile(db),
    );
    return run<ClaimedDelivery>(
      sql`
      with recursive open_partners as (
        -- Every partner with open deliveries and its soonest one's time, a probe each
        -- (webhook_deliveries_partner_open_idx, partner by partner).
        (select d.partner_id, d.next_attempt_at
           from webhook_deliveries d
          where d.status in ('pending', 'failed')
          order by d.partner_id, d.next_attempt_at
          limit 1)
        union all
        select next.partner_id, next.next_attempt_at
          from open_partners previous
         cross join lateral (
           select d.partner_id, d.next_attempt_at
             from webhook_deliveries d
            where d.status in ('pending', 'failed') and d.partner_id > previous.partner_id
            order by d.partner_id, d.next_attempt_at
            limit 1) next
      ), due_stores as (
        select d.delivery_id, d.partner_id, d.next_attempt_at, 1 as lane
          from webhook_deliveries d
         where d.order_id is null and ${rowDue}
           and exists (
             select 1 from webhook_endpoints e
              where e.partner_id = d.partner_id and e.disabled_at is null)
           and (d.version = 1 or ${graceOver}
                or exists (
                  select 1 from webhook_store_events before
                   where before.store_id = d.store_id and before.version = d.version - 1))
         order by d.next_attempt_at
         limit case when ${claim.storeLimit} > 0 then ${claim.scanLimit} else 0 end
      ), in_flight as (
        -- The leases of each partner with something due, counted up to its cap: a leased row
        -- was due when claimed, so they are among its rows due by now (its back-off is not).
        select candidate.partner_id,
               (select count(*)::int from (
                  select 1 from webhook_deliveries l
                   where l.partner_id = candidate.partner_id
                     and l.status in ('pending', 'failed') and l.next_attempt_at <= now()
                     and l.lease_expires_at > now()
                   -- Oldest first, as they were claimed: the count stops at the cap early.
                   order by l.next_attempt_at
                   limit ${claim.perPartner}) leases) as leased
          from (select partner_id from open_partners where next_attempt_at <= now()
                union
                select partner_id from due_stores) candidate
         where exists (
           select 1 from webhook_endpoints e
            where e.partner_id = candidate.partner_id and e.disabled_at is null)
      ), due_orders as (
        -- The oldest due order deliveries of each partner below its cap, as many as it may take.
        select due.*
          from in_flight
         cross join lateral (
           select d.delivery_id, d.partner_id, d.next_attempt_at, 0 as lane
             from webhook_deliveries d
            where d.partner_id = in_flight.partner_id and d.order_id is not null and ${rowDue}
              and (d.version = 1 or ${graceOver}
                   or exists (
                     select 1 from webhook_deliveries before
                      where before.sequence_key = d.sequence_key and before.version = d.version - 1))
            order by d.next_attempt_at
            limit ${claim.perPartner}) due
         where in_flight.leased < ${claim.perPartner}
         order by due.next_attempt_at
         limit ${claim.scanLimit}
      ), due as (
        select * from due_orders union all select * from due_stores
      ), ranked as (
        select due.*, row_number() over (
                 partition by due.partner_id
                 order by due.lane, due.next_attempt_at, due.delivery_id) as rank
          from due
      ), eligible as (
        select ranked.*, row_number() over (
                 partition by ranked.lane order by ranked.next_attempt_at) as lane_rank
          from ranked left join in_flight using (partner_id)
         where ranked.rank <= ${claim.perPartner} - coalesce(in_flight.leased, 0)
      ), picked as (
        select eligible.delivery_id
          from eligible
         where eligible.lane = 0 or eligible.lane_rank <= ${claim.storeLimit}
         order by eligible.lane, eligible.next_attempt_at
         limit ${claim.limit}
      )
      update webhook_deliveries w
         set lease_owner = ${claim.holder} || ':' || gen_random_uuid(),
             lease_expires_at = now() + ${claim.leaseMs} * interval '1 millisecond',
             updated_at = now()
        from picked, webhook_endpoints e
       where w.delivery_id = picked.delivery_id and e.partner_id = w.partner_id
      returning w.*, e.url, e.secret, e.previous_secret, e.previous_secret_expires_at,
                coalesce(w.payload, (select se.payload from webhook_store_events se
                                      where se.event_id = w.event_id)) as body
    `.compile(db),
    );
  });
}

/** How a try ended, as its delivery records it; `latencyMs` from its request to its answer. */
export type TryOutcome =
  /** No try was made (the partner's breaker is open): the delivery waits `delayMs`. */
  | { kind: 'postponed'; delayMs: number; error: string }
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
  const tried = outcome.kind !== 'postponed';
  return {
    deliveryId,
    holder,
    // postponed keeps its status; retry leaves it failed.
    status: { postponed: null, delivered: 'delivered', dead: 'dead', retry: 'failed' }[
      outcome.kind
    ],
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
 * Every try made is also kept as an attempt row (an order's timeline, a delivery's tries). A delivery
 * that is over (delivered, dead) makes the next open version of its sequence due. A sequence
 * has one version leased at a time, so a batch holds at most one of each.
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
                    ${column((row) => row.status)}::text[], ${column((row) => row.attempts)}::int[],
                    ${column((row) => row.responseStatus)}::int[],
                    ${column((row) => row.latencyMs)}::int[],
                    ${column((row) => row.delayMs)}::float8[], ${column((row) => row.error)}::text[])
             as outcome(delivery_id, holder, status, attempts, response_status, latency_ms,
                        delay_ms, error)
    ), settled as (
      update webhook_deliveries d
         set status = coalesce(outcome.status, d.status),
             attempts = coalesce(outcome.attempts, d.attempts),
             last_attempt_at = case when outcome.status is null then d.last_attempt_at else now() end,
             last_response_status = case when outcome.status is null then d.last_response_status
                                         else outcome.response_status end,
             last_error = outcome.error,
             next_attempt_at = now() + outcome.delay_ms * interval '1 millisecond',
             delivered_at = case when outcome.status = 'delivered' then now() else d.delivered_at end,
             lease_owner = null,
             lease_expires_at = null,
             updated_at = now()
        from outcome
       where d.delivery_id = outcome.delivery_id and d.lease_owner = outcome.holder
         and (select setting from relaxed) is not null
      returning d.sequence_key, d.version, d.status, d.delivery_id, d.order_id, d.last_attempt_at,
                outcome.status as tried, outcome.attempts, outcome.response_status,
                outcome.latency_ms, outcome.error
    ), attempt as (
      insert into webhook_delivery_attempts
             (delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at)
      select delivery_id, attempts, tried, response_status, latency_ms, error, last_attempt_at
        from settled
       where tried is not null
    )
    -- One uncorrelated lookup of each sequence's next open version (the open-versions index),
    -- then its row by key: never a scan of every waiting row.
    update webhook_deliveries next
       set next_attempt_at = now()
      from settled
     where settled.status in ('delivered', 'dead')
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

/** A delivery as the partner reads it: with the latency of its last try. */
export type ListedDelivery = WebhookDeliveryRow & { last_latency_ms: number | null };

/** The latency of a delivery's last try (its attempt key, the newest by identity). */
function lastLatency(deliveryId: Expression<string>) {
  return sql<number | null>`(
    select attempt.latency_ms from webhook_delivery_attempts attempt
     where attempt.delivery_id = ${deliveryId}
     order by attempt.attempt_id desc limit 1)`.as('last_latency_ms');
}

/** The partner's deliveries, newest first; `skipped` ones are not the partner's business. */
export async function listDeliveries(
  db: Db,
  partnerId: string,
  query: WebhookDeliveriesQuery,
  after: ListKey | undefined,
): Promise<{ rows: ListedDelivery[]; next: ListKey | null }> {
  let select = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .select(createdAtKey.as('created_at_key'))
    .select((eb) => lastLatency(eb.ref('webhook_deliveries.delivery_id')))
    .where('partner_id', '=', partnerId)
    .where(
      'status',
      'in',
      query.status ? [query.status] : ['pending', 'failed', 'delivered', 'dead'],
    );
  if (after) select = select.where(olderThan(after, 'delivery_id'));
  const rows = await select
    .orderBy('created_at', 'desc')
    .orderBy('delivery_id', 'desc')
    .limit(query.limit + 1)
    .execute();
  return pageOf(rows, query.limit, (row) => row.delivery_id);
}

/** Deliver again at once with the same webhook-id, whatever became of it before. */
export function resendDelivery(
  db: Db,
  partnerId: string,
  deliveryId: string,
): Promise<ListedDelivery | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set({
      status: 'pending',
      attempts: 0,
      next_attempt_at: sql<Date>`now()`,
      lease_owner: null,
      lease_expires_at: null,
      last_error: null,
      updated_at: sql<Date>`now()`,
    })
    .where('delivery_id', '=', deliveryId)
    .where('partner_id', '=', partnerId)
    .where('status', '!=', 'skipped')
    .returningAll()
    .returning((eb) => lastLatency(eb.ref('webhook_deliveries.delivery_id')))
    .executeTakeFirst();
}

/**
 * Delivered and skipped rows recorded before the retention are no longer needed, nor the
 * store events no row reads any more.
 */
export async function pruneSettledDeliveries(db: Db, retentionMs: number): Promise<void> {
  const before = sql<Date>`now() - ${retentionMs} * interval '1 millisecond'`;
  await db
    .deleteFrom('webhook_deliveries')
    .where('created_at', '<', before)
    .where('status', 'in', ['delivered', 'skipped'])
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

/** A try of an order event's delivery, with the event it carried. */
export type OrderDeliveryAttempt = Omit<WebhookDeliveryAttemptRow, 'attempt_id'> &
  Pick<WebhookDeliveryRow, 'version'> & { event_type: OrderEventKind };

/**
 * The `limit` most recent tries of the deliveries of a partner's order, oldest first, and how
 * many there are in all (the order's deliveries by their (sequence, version) key).
 */
export async function recentOrderAttempts(
  db: Db,
  query: { orderId: string; partnerId: string; limit: number },
): Promise<{ rows: OrderDeliveryAttempt[]; total: number }> {
  const rows = await db
    .selectFrom('webhook_delivery_attempts as attempt')
    .innerJoin('webhook_deliveries as delivery', 'delivery.delivery_id', 'attempt.delivery_id')
    .select([
      'attempt.delivery_id',
      'attempt.attempt',
      'attempt.outcome',
      'attempt.response_status',
      'attempt.latency_ms',
      'attempt.error',
      'attempt.tried_at',
      // An order's sequence holds its order events only.
      sql<OrderEventKind>`delivery.event_type`.as('event_type'),
      'delivery.version',
      sql<number>`(count(*) over ())::int`.as('total'),
    ])
    .where('delivery.sequence_key', '=', query.orderId)
    .where('delivery.partner_id', '=', query.partnerId)
    .orderBy('attempt.tried_at', 'desc')
    .orderBy('attempt.attempt_id', 'desc')
    .limit(query.limit)
    .execute();
  return { rows: rows.reverse(), total: rows[0]?.total ?? 0 };
}

/**
 * The `limit` most recent tries of one of a partner's deliveries, oldest first, and how many
 * there are in all; undefined when the delivery is not the partner's (or was skipped).
 */
export async function deliveryAttempts(
  db: Db,
  query: { deliveryId: string; partnerId: string; limit: number },
): Promise<{ rows: Omit<WebhookDeliveryAttemptRow, 'attempt_id'>[]; total: number } | undefined> {
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select('delivery_id')
    .where('delivery_id', '=', query.deliveryId)
    .where('partner_id', '=', query.partnerId)
    .where('status', '!=', 'skipped')
    .executeTakeFirst();
  if (!delivery) return undefined;
  const rows = await db
    .selectFrom('webhook_delivery_attempts')
    .select([
      'delivery_id',
      'attempt',
      'outcome',
      'response_status',
      'latency_ms',
      'error',
      'tried_at',
      sql<number>`(count(*) over ())::int`.as('total'),
    ])
    .where('delivery_id', '=', query.deliveryId)
    .orderBy('attempt_id', 'desc')
    .limit(query.limit)
    .execute();
  return { rows: rows.reverse(), total: rows[0]?.total ?? 0 };
}
