import { subjects } from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import type { OrderRow } from '../db/ordering.table.js';

/** Whether cancelling the order refunds it: a card order with a charge and something to pay. */
export function refundsOnCancel<
  Row extends Pick<OrderRow, 'details' | 'charge_id' | 'total_minor'>,
>(row: Row): row is Row & { charge_id: string } {
  return row.details.paymentType === 'CARD' && row.charge_id !== null && row.total_minor > 0;
}

/**
 * Refund a cancelled card order's captured total, under the order's lock: the key is the
 * order's, so a retried cancel (after a failed commit), the store's or the platform's, never
 * refunds twice.
 */
export async function refundOrder(
  bus: BusClient,
  row: OrderRow,
  ctx: Pick<RequestContext, 'requestId' | 'traceparent' | 'tracestate'>,
  timeoutMs: number | undefined,
): Promise<void> {
  if (!refundsOnCancel(row)) return;
  const amount = Number(row.total_minor);
  // Ordering is trusted inside the platform: it asks payments on behalf of the partner
  // that placed the order (payments finds charges by that partner), not of the store.
  const placer: RequestContext = {
    requestId: ctx.requestId,
    partnerId: row.partner_id,
    partnerKind: 'distribution',
    endUserId: row.end_user_id,
    // The placer's mode, whoever cancels: payments refunds on the charge's own processor.
    mode: row.mode,
    ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
    ...(ctx.tracestate ? { tracestate: ctx.tracestate } : {}),
  };
  await bus.request(
    subjects.payments.refund,
    { chargeId: row.charge_id, amount, idempotencyKey: `order-cancel-${row.order_id}` },
    placer,
    timeoutMs === undefined ? undefined : { timeoutMs },
  );
}
