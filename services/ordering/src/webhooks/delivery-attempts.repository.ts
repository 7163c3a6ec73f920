// The tries of webhook deliveries: an order's (its timeline), and one delivery's.
import type { OrderEventKind } from '@pcp/contracts';
import { sql, type Kysely } from 'kysely';

import type {
  OrderingDatabase,
  WebhookDeliveryAttemptRow,
  WebhookDeliveryRow,
} from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

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
