// Webhook deliveries claimed: the due ones leased to a dispatcher, under the per-partner cap.
import type { PartnerMode } from '@pcp/contracts';
import { preparedTransaction } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';

import type { OrderingDatabase, WebhookDeliveryRow } from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** A claimed delivery with where and how to send it. */
export type ClaimedDelivery = WebhookDeliveryRow & {
  /** The bytes to send: the row's own payload, or its store event's. */
  body: string;
  url: string;
  /** The endpoint's mode: its secrets are bound to it. */
  endpoint_mode: PartnerMode;
  /** The endpoint's API version (a date): the body is rendered in it when it is sent. */
  endpoint_api_version: string;
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
      returning w.*, e.url, e.mode as endpoint_mode, e.api_version as endpoint_api_version,
                e.secret, e.previous_secret,
                e.previous_secret_expires_at,
                coalesce(w.payload, (select se.payload from webhook_store_events se
                                      where se.event_id = w.event_id)) as body
    `.compile(db),
    );
  });
}
