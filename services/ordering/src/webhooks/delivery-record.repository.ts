// Webhook deliveries recorded: an order's events one row each, a store's event fanned out to
// every subscribed partner, and both appended to the partners' webhook stream logs.
import type { OrderEventKind, PartnerMode, StoreEventKind } from '@pcp/contracts';
import { preparedTransaction, runPrepared } from '@pcp/service-kit';
import { sql, type Kysely, type RawBuilder } from 'kysely';

import type { OrderingDatabase } from '../db/ordering.table.js';

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
