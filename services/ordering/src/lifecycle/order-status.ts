import type { OrderEventKind, OrderState, OrderStatus, OrderStatusChange } from '@pcp/contracts';

export type FulfillmentMode = 'PICKUP' | 'DELIVERY_BY_MERCHANT';

/** Where an order stands: what the status machine needs of it. */
export interface OrderPosition {
  readonly state: OrderState;
  readonly status: OrderStatus;
  readonly fulfillmentMode: FulfillmentMode;
  /** ISO 8601 instant, or null when no estimate was given yet. */
  readonly estimatedReadyAt: string | null;
  /** Who cancelled a cancelled order (a store's cancel sent again is answered as it was). */
  readonly cancelledBy?: 'store' | 'platform' | null;
}

/** The order after a legal move, with the event that announces it. */
export interface OrderMove {
  readonly kind: 'moved';
  readonly state: OrderState;
  readonly status: OrderStatus;
  readonly event: Exclude<OrderEventKind, 'order.created'>;
  /** The status the order had before the move (the event's `previousStatus`). */
  readonly previousStatus: OrderStatus;
  /** Set when the move brings a new estimate; otherwise the order keeps its own. */
  readonly estimatedReadyAt?: string;
  /** Set when the move cancels the order. */
  readonly cancelReason?: string;
  /** Set when the cancel denies a pending order with the items that ran out. */
  readonly unavailableItemIds?: readonly string[];
}

export type OrderStatusOutcome =
  | OrderMove
  /** The change repeats where the order stands: no new version, no event. */
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'illegal'; readonly detail: string };

/** The step after each open status; `ready` steps to `inTransit` for delivery only. */
const nextStep: Partial<Record<OrderStatus, OrderStatus>> = {
  pending: 'confirmed',
  confirmed: 'preparing',
  preparing: 'ready',
};

/** Cancelling is allowed while open and before the order left the store. */
const cancellable: ReadonlySet<OrderStatus> = new Set([
  'pending',
  'confirmed',
  'preparing',
  'ready',
]);

function stepAfter(position: OrderPosition): OrderStatus | undefined {
  if (position.status === 'ready') {
    return position.fulfillmentMode === 'DELIVERY_BY_MERCHANT' ? 'inTransit' : undefined;
  }
  return nextStep[position.status];
}

/** The status that finishes an order: `ready` for pickup, `inTransit` for delivery. */
function finishingStatus(mode: FulfillmentMode): OrderStatus {
  return mode === 'DELIVERY_BY_MERCHANT' ? 'inTransit' : 'ready';
}

const sameInstant = (a: string, b: string | null) => b !== null && Date.parse(a) === Date.parse(b);

/**
 * The order status machine (the spec's Order state and Order status tables,
 * docs/guide/orders.md#order-status): an open order steps pending → confirmed → preparing → ready,
 * and a delivery order on to inTransit; `{state: completed}` finishes it from ready (pickup) or
 * inTransit (delivery); `{state: cancelled}` ends it while open and before inTransit, and sent
 * again to an order its store cancelled is a no-op. Skipping a step, going back, a pickup order
 * in transit and anything else on an order that ended are illegal.
 * Sending the status the order has is a no-op unless it brings another estimatedReadyAt. An
 * estimate goes with a step (the order is still being made); finishing and cancelling keep the
 * last.
 */
export function applyOrderStatusChange(
  position: OrderPosition,
  change: OrderStatusChange,
): OrderStatusOutcome {
  const { state, status } = position;
  const illegal = (move: string): OrderStatusOutcome => ({
    kind: 'illegal',
    detail: `The order is ${state === 'open' ? status : state}; it cannot ${move}`,
  });
  const move = describeChange(change);
  // A store's cancel sent again (its first answer lost) finds what it did: no new version.
  if (state === 'cancelled' && position.cancelledBy === 'store' && change.state === 'cancelled') {
    return { kind: 'unchanged' };
  }
  if (state !== 'open') return illegal(move);

  if (change.state === 'completed') {
    const from = finishingStatus(position.fulfillmentMode);
    if (status !== from) {
      const mode = position.fulfillmentMode === 'PICKUP' ? 'pickup' : 'delivery';
      return illegal(`${move} (a ${mode} order is completed from ${from})`);
    }
    return {
      kind: 'moved',
      state: 'completed',
      status: 'completed',
      event: 'order.status_changed',
      previousStatus: status,
    };
  }

  if (change.state === 'cancelled') {
    if (!cancellable.has(status)) return illegal(`${move} (an order in transit is not cancelled)`);
    if (change.cancelReason === undefined) return illegal(`${move} without a cancelReason`);
    return {
      kind: 'moved',
      state: 'cancelled',
      status: 'cancelled',
      event: 'order.cancelled',
      previousStatus: status,
      cancelReason: change.cancelReason,
      ...(change.unavailableItemIds === undefined
        ? {}
        : { unavailableItemIds: change.unavailableItemIds }),
    };
  }

  if (change.status === undefined) return illegal(move);
  const estimate =
    change.estimatedReadyAt === undefined ||
    sameInstant(change.estimatedReadyAt, position.estimatedReadyAt)
      ? {}
      : { estimatedReadyAt: change.estimatedReadyAt };
  if (change.status === status) {
    if (!('estimatedReadyAt' in estimate)) return { kind: 'unchanged' };
    return {
      kind: 'moved',
      state,
      status,
      event: 'order.status_changed',
      previousStatus: status,
      ...estimate,
    };
  }
  const next = stepAfter(position);
  if (change.status !== next) {
    const hint =
      change.status === 'inTransit' && position.fulfillmentMode === 'PICKUP'
        ? ' (a pickup order is never in transit)'
        : next === undefined
          ? ''
          : ` (its next status is ${next})`;
    return illegal(`${move}${hint}`);
  }
  return {
    kind: 'moved',
    state,
    status: next,
    event: 'order.status_changed',
    previousStatus: status,
    ...estimate,
  };
}

/** The move a change asks for, as a detail names it. */
function describeChange(change: OrderStatusChange): string {
  if (change.state === 'completed') return 'be completed';
  if (change.state === 'cancelled') return 'be cancelled';
  if (change.status !== undefined) return `move to ${change.status}`;
  return 'be changed without a status or state';
}
