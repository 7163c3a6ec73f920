// The tries of webhook deliveries: an order's (its timeline), and one delivery's. A delivery's
// latest try is on its row, the tries it superseded in webhook_delivery_attempts; both read
// as one log, in the order the tries were made.
import type { OrderEventKind } from '@pcp/contracts';
import { sql, type Kysely, type RawBuilder } from 'kysely';

import type {
  OrderingDatabase,
  WebhookDeliveryAttemptRow,
  WebhookDeliveryRow,
} from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** A try of a delivery, as the partner reads it. */
export type DeliveryAttempt = Omit<WebhookDeliveryAttemptRow, 'attempt_id'>;

/** A try of an order event's delivery, with the event it carried. */
export type OrderDeliveryAttempt = DeliveryAttempt &
  Pick<WebhookDeliveryRow, 'version'> & { event_type: OrderEventKind };

/**
 * Every try of the deliveries `which` selects (a condition on `delivery`), with `try_key` in
 * the order they were made: a superseded try's attempt_id, the current try after all of them.
 */
function triesOf(which: RawBuilder<boolean>) {
  return sql`
    select attempt.delivery_id, attempt.attempt, attempt.outcome, attempt.response_status,
           attempt.latency_ms, attempt.error, attempt.tried_at, attempt.attempt_id as try_key,
           delivery.event_type, delivery.version
      from webhook_delivery_attempts attempt
      join webhook_deliveries delivery on delivery.delivery_id = attempt.delivery_id
     where ${which}
    union all
    select delivery.delivery_id, delivery.last_try_attempt, delivery.last_try_outcome,
           delivery.last_response_status, delivery.last_latency_ms, delivery.last_try_error,
           delivery.last_attempt_at, 9223372036854775807 as try_key,
           delivery.event_type, delivery.version
      from webhook_deliveries delivery
     where ${which} and delivery.last_try_outcome is not null`;
}

type CountedTry<T> = T & { total: number };

/** The rows oldest first, without the count each carries, and the count. */
function oldestFirst<T>(rows: CountedTry<T>[]): { rows: T[]; total: number } {
  const total = rows[0]?.total ?? 0;
  return { rows: rows.map(({ total: _total, ...row }) => row as T).reverse(), total };
}

/**
 * The `limit` most recent tries of the deliveries of a partner's order, oldest first, and how
 * many there are in all (the order's deliveries by their (sequence, version) key).
 */
export async function recentOrderAttempts(
  db: Db,
  query: { orderId: string; partnerId: string; limit: number },
): Promise<{ rows: OrderDeliveryAttempt[]; total: number }> {
  const { rows } = await sql<CountedTry<OrderDeliveryAttempt>>`
    select delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at,
           -- An order's sequence holds its order events only.
           event_type, version, (count(*) over ())::int as total
      from (${triesOf(
        sql`delivery.sequence_key = ${query.orderId} and delivery.partner_id = ${query.partnerId}`,
      )}) tries
     order by tried_at desc, try_key desc
     limit ${query.limit}`.execute(db);
  return oldestFirst(rows);
}

/**
 * The `limit` most recent tries of one of a partner's deliveries, oldest first, and how many
 * there are in all; undefined when the delivery is not the partner's (or was skipped).
 */
export async function deliveryAttempts(
  db: Db,
  query: { deliveryId: string; partnerId: string; limit: number },
): Promise<{ rows: DeliveryAttempt[]; total: number } | undefined> {
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select('delivery_id')
    .where('delivery_id', '=', query.deliveryId)
    .where('partner_id', '=', query.partnerId)
    .where('status', '!=', 'skipped')
    .executeTakeFirst();
  if (!delivery) return undefined;
  const { rows } = await sql<CountedTry<DeliveryAttempt>>`
    select delivery_id, attempt, outcome, response_status, latency_ms, error, tried_at,
           (count(*) over ())::int as total
      from (${triesOf(sql`delivery.delivery_id = ${query.deliveryId}`)}) tries
     order by try_key desc
     limit ${query.limit}`.execute(db);
  return oldestFirst(rows);
}
