import { fromMinorUnits, type OrderTimelineEvent } from '@pcp/contracts';
import type { OrderRefundRow, OrderRow, OrderStatusChangeRow } from '../db/ordering.table.js';
import type { OrderDeliveryAttempt } from '../webhooks/delivery-attempts.repository.js';
import { refundsOnCancel } from './order-refunds.js';

/** Events at the same instant read in the order they happened: a refund before its cancel. */
const rank: Record<OrderTimelineEvent['kind'], number> = {
  placed: 0,
  payment: 1,
  store: 2,
  status: 3,
  webhook: 4,
};

/**
 * An order's timeline (docs/guide/orders.md#an-orders-timeline) from what ordering keeps: the
 * order, its status history and its deliveries' tries. The payment steps follow from the
 * order: place records an order with a charge only once it is captured (so it was authorized
 * and captured when placed); a cancel owes its refund, shown once payments made it (orders
 * cancelled before refunds were owed were refunded before their cancel). The store's answer
 * follows from the history: pending to confirmed (or confirmed at placement, through the
 * store's submission URL) is its acceptance, pending to cancelled by the store its denial.
 */
export function orderTimelineOf(
  order: OrderRow,
  changes: readonly OrderStatusChangeRow[],
  attempts: readonly OrderDeliveryAttempt[],
  refunds: readonly Pick<OrderRefundRow, 'amount' | 'state' | 'settled_at'>[],
): OrderTimelineEvent[] {
  const events: OrderTimelineEvent[] = [{ at: iso(order.created_at), kind: 'placed' }];
  const money = {
    amount: fromMinorUnits(Number(order.total_minor), order.currency),
    currency: order.currency,
  };
  if (order.charge_id !== null) {
    const at = iso(order.created_at);
    events.push({ at, kind: 'payment', action: 'authorized', ...money });
    events.push({ at, kind: 'payment', action: 'captured', ...money });
  }
  for (const refund of refunds) {
    if (refund.state !== 'settled' || !refund.settled_at) continue;
    const amount =
      refund.amount === null ? money.amount : fromMinorUnits(refund.amount, order.currency);
    events.push({
      at: iso(refund.settled_at),
      kind: 'payment',
      action: 'refunded',
      amount,
      currency: order.currency,
    });
  }
  if (order.state === 'cancelled' && refundsOnCancel(order) && refunds.length === 0) {
    events.push({ at: iso(order.updated_at), kind: 'payment', action: 'refunded', ...money });
  }
  for (const change of changes) {
    const at = iso(change.changed_at);
    const accepted =
      change.status === 'confirmed' &&
      (change.previous_status === 'pending' || change.version === 1);
    if (accepted) {
      events.push({ at, kind: 'store', action: 'accepted', reason: null, unavailableItemIds: [] });
    }
    if (
      change.previous_status === 'pending' &&
      change.status === 'cancelled' &&
      change.cancelled_by === 'store'
    ) {
      events.push({
        at,
        kind: 'store',
        action: 'denied',
        reason: change.cancel_reason,
        unavailableItemIds: change.unavailable_item_ids ?? [],
      });
    }
    events.push({
      at,
      kind: 'status',
      version: change.version,
      state: change.state,
      status: change.status,
      previousStatus: change.previous_status,
      estimatedReadyAt: change.estimated_ready_at ? iso(change.estimated_ready_at) : null,
      cancelledBy: change.cancelled_by,
    });
  }
  for (const attempt of attempts) {
    events.push({
      at: iso(attempt.tried_at),
      kind: 'webhook',
      deliveryId: attempt.delivery_id,
      eventType: attempt.event_type,
      version: attempt.version,
      attempt: attempt.attempt,
      outcome: attempt.outcome,
      responseStatus: attempt.response_status,
      latencyMs: attempt.latency_ms,
      error: attempt.error,
    });
  }
  // Stable: events of one kind at one instant keep the order they were pushed in.
  return events.sort((a, b) => a.at.localeCompare(b.at) || rank[a.kind] - rank[b.kind]);
}

const iso = (date: Date) => date.toISOString();
