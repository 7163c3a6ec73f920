import type { ChargeOwners, ChargeStatus } from '@pcp/contracts';

/**
 * What a charge is, as the reconciler finds it. Every charge must be exactly one of the
 * explained classes; one that is not is released (`release`: voided if authorized, refunded
 * if captured) or, where that cannot be decided, `unexplained`, for an operator.
 */
export const ledgerClasses = [
  /** Captured, and paying for exactly one live order of the same amount. */
  'captured_for_order',
  'refunded',
  'voided',
  'declined',
  /** Its authorization was never made: nothing is held at the processor. */
  'not_authorized',
  /** An authorization or capture its place attempt may still use, younger than the bound. */
  'in_flight',
  'unexplained',
] as const;
export type LedgerClass = (typeof ledgerClasses)[number];

/** The facts the reconciler gathered about one charge (payments' row, after the processor's). */
export interface ChargeFacts {
  readonly status: ChargeStatus;
  readonly amount: number;
  readonly currency: string;
  readonly capturedAmount: number;
  readonly refundedAmount: number;
  readonly createdAt: Date;
  /** Whether the charge is keyed by its order (charges older than that rule are not). */
  readonly keyedByOrder: boolean;
}

export type Verdict =
  | { readonly class: Exclude<LedgerClass, 'unexplained'> }
  | { readonly class: 'unexplained'; readonly reason: string }
  /** Money held for an order that will never use it: void or refund it, then it is released. */
  | { readonly release: string };

export interface LedgerBounds {
  readonly now: Date;
  /**
   * How long a charge may stay in flight: longer than an Idempotency-Key's deadline (a key may
   * be resumed until then), so nothing a live attempt may still use is ever released.
   */
  readonly inFlightMs: number;
}

/**
 * The reconciler's rule for one charge, given its owners as ordering knows them: the orders
 * naming it and the place attempt of its order id (while ordering keeps it). Pure: the
 * reconciler gathers the facts and acts on the verdict.
 */
export function judgeCharge(
  charge: ChargeFacts,
  owners: Pick<ChargeOwners['owners'][number], 'orders' | 'attempt'>,
  bounds: LedgerBounds,
): Verdict {
  if (owners.orders.length > 1) {
    return unexplained(`${owners.orders.length} orders name this charge`);
  }
  const [order] = owners.orders;
  const young = bounds.now.getTime() - charge.createdAt.getTime() < bounds.inFlightMs;
  // An unanswered attempt may still capture the charge or record its order, until its
  // deadline (the sweeper settles it then); a charge from before orders keyed charges has no
  // attempt to ask about, so only its age protects it.
  const mayBeUsed = owners.attempt ? !owners.attempt.answered : !charge.keyedByOrder && young;
  const inFlight = (what: string): Verdict =>
    young ? { class: 'in_flight' } : unexplained(`${what}, older than the in-flight bound`);

  switch (charge.status) {
    case 'declined':
      return order ? unexplained('an order names a declined charge') : { class: 'declined' };
    case 'authorizing':
      // Asked of the processor already: it holds nothing. Only its attempt could still make
      // it (payments' own call in flight is left alone for the quiet period before this).
      if (order) return unexplained('an order names a charge that was never authorized');
      if (mayBeUsed) return inFlight('an authorization its attempt may still make');
      return { class: 'not_authorized' };
    case 'voided':
      return order && order.state !== 'cancelled'
        ? unexplained(`a ${order.state} order names a voided charge`)
        : { class: 'voided' };
    case 'refunded':
      return order && order.state !== 'cancelled'
        ? unexplained(`a ${order.state} order's charge was refunded`)
        : { class: 'refunded' };
    case 'authorized':
      if (order) return unexplained('the order was recorded without capturing its charge');
      if (mayBeUsed) return inFlight('an authorization its attempt still holds');
      return { release: 'an authorization no order will use' };
    case 'captured':
    case 'partially_refunded': {
      if (!order) {
        if (mayBeUsed) return inFlight('a capture whose order was never recorded');
        return { release: 'a capture with no order' };
      }
      if (order.state === 'cancelled') return cancelledOrderCapture(order, bounds);
      const paid = charge.capturedAmount - charge.refundedAmount;
      if (order.totalMinor !== paid || order.currency.toUpperCase() !== charge.currency) {
        return unexplained(
          `the order's total ${order.totalMinor} ${order.currency} is not the ${paid} ${charge.currency} it paid`,
        );
      }
      return { class: 'captured_for_order' };
    }
  }
}

/**
 * A cancelled order whose charge is still captured: ordering owes its refund and settles it
 * (in flight until the bound, then reported: ordering raises it too); a refund ordering
 * settled that the charge does not show is reported; a cancel that owed no refund (a defect)
 * is released.
 */
function cancelledOrderCapture(
  order: Pick<ChargeOwners['owners'][number]['orders'][number], 'refund' | 'refundOwedSince'>,
  bounds: LedgerBounds,
): Verdict {
  switch (order.refund) {
    case 'owed': {
      const since = order.refundOwedSince ? Date.parse(order.refundOwedSince) : 0;
      return bounds.now.getTime() - since < bounds.inFlightMs
        ? { class: 'in_flight' }
        : unexplained("a cancelled order's refund owed for longer than the in-flight bound");
    }
    case 'settled':
      return unexplained("ordering settled the cancelled order's refund, yet it is captured");
    case 'none':
      return { release: 'the capture of a cancelled order that owed no refund' };
  }
}

function unexplained(reason: string): Verdict {
  return { class: 'unexplained', reason };
}
