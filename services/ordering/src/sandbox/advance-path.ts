import type { OrderStatus, OrderStatusChange, TestAdvanceTarget } from '@pcp/contracts';
import type { FulfillmentMode } from '../lifecycle/order-status.js';

/** Why the advance helper cancels an order (docs/guide/sandbox.md#advancing-an-order). */
export const ADVANCE_CANCEL_REASON = "Cancelled with the sandbox's advance helper";

/** The statuses a store steps a pending order through, in order. */
const walk = ['confirmed', 'preparing', 'ready', 'inTransit'] as const;
type Step = (typeof walk)[number];
const positionOf = (status: OrderStatus) =>
  status === 'pending' ? -1 : walk.indexOf(status as Step);

/**
 * The store's changes that take an order from `status` to `to` one step at a time, each for the
 * status machine to apply (docs/guide/sandbox.md#advancing-an-order): a status later on the walk is
 * reached through every status between; `completed` through the finishing status (ready for pickup,
 * inTransit for delivery); `cancelled` at once. A target behind the order, or one the order never
 * reaches (a pickup order in transit), is the single change that names it, so the status machine
 * refuses it with its own detail. `timeout` is not a store's change.
 */
export function advanceChanges(
  status: OrderStatus,
  mode: FulfillmentMode,
  to: Exclude<TestAdvanceTarget, 'timeout'>,
): OrderStatusChange[] {
  if (to === 'cancelled') return [{ state: 'cancelled', cancelReason: ADVANCE_CANCEL_REASON }];
  const from = positionOf(status);
  const finishing: Step = mode === 'DELIVERY_BY_MERCHANT' ? 'inTransit' : 'ready';
  const target = to === 'completed' ? finishing : to;
  const until = walk.indexOf(target);
  // Ended orders and those at or past the target fall to the machine's refusal below.
  const open = status === 'pending' || walk.includes(status as Step);
  const reachable = open && until > from && !(mode === 'PICKUP' && target === 'inTransit');
  if (!reachable) return [to === 'completed' ? { state: 'completed' } : { status: to }];
  const steps: OrderStatusChange[] = walk
    .slice(from + 1, until + 1)
    .map((next) => ({ status: next }));
  return to === 'completed' ? [...steps, { state: 'completed' }] : steps;
}
