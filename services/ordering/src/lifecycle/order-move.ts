import type { Kysely } from 'kysely';
import type { OrderingMutant } from '../config.js';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { oweCancelRefund } from './order-refunds.js';
import { resetTimeouts } from './acceptance.repository.js';
import { recordOrderEvent, updateOrderStatus } from './order.repository.js';
import type { OrderMove } from './order-status.js';

/**
 * Write a legal move of the status machine to the locked row: its next version, that
 * version's event in the outbox and, when the move cancels a card order, the refund it owes
 * (settled by the refund sweeper after commit: the caller nudges it). A store's status change
 * and the sandbox's advance helper both move orders through it.
 */
export async function writeOrderMove(
  trx: Kysely<OrderingDatabase>,
  row: OrderRow,
  move: OrderMove,
  deps: { readonly clock: () => Date; readonly prefix: string; readonly mutant?: OrderingMutant },
): Promise<OrderRow> {
  const updated = await updateOrderStatus(trx, row, {
    state: move.state,
    status: move.status,
    updated_at: deps.clock(),
    ...(move.estimatedReadyAt === undefined
      ? {}
      : { estimated_ready_at: new Date(move.estimatedReadyAt) }),
    ...(move.cancelReason === undefined
      ? {}
      : { cancel_reason: move.cancelReason, cancelled_by: 'store' as const }),
    // The deadline ends with pending: a confirmed or cancelled order has none.
    ...(move.previousStatus === 'pending' && move.status !== 'pending' ? { accept_by: null } : {}),
  });
  // A confirm ends the store's run of orders not accepted in time.
  if (move.previousStatus === 'pending' && move.status === 'confirmed') {
    await resetTimeouts(trx, row.store_id, deps.clock());
  }
  await recordOrderEvent(
    trx,
    updated,
    move.event,
    move.previousStatus,
    deps.prefix,
    move.unavailableItemIds,
  );
  if (move.event === 'order.cancelled' && deps.mutant !== 'cancel-no-refund') {
    await oweCancelRefund(trx, updated);
  }
  return updated;
}
