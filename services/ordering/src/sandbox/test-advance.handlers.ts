import { subjects, type Order } from '@pcp/contracts';
import { AppError, handle, requireTestPartner, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { OrderingMutant } from '../config.js';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { acceptanceEnded } from '../lifecycle/acceptance-window.js';
import { cancelNotAccepted } from '../lifecycle/acceptance-sweeper.js';
import { writeOrderMove } from '../lifecycle/order-move.js';
import { applyOrderStatusChange } from '../lifecycle/order-status.js';
import { toOrder } from '../lifecycle/order.repository.js';
import { advanceChanges } from './advance-path.js';
import { isFixtureStoreOwner } from './fixture-stores.js';

export interface TestAdvanceDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly clock: () => Date;
  readonly prefix: string;
  readonly nudge: () => void;
  /** Ask payments for owed refunds now (after a commit that cancelled a card order). */
  readonly nudgeRefunds: () => void;
  /** Test-only: the fault suite's planted defect (`ORDERING_TEST_MUTANT`). */
  readonly mutant?: OrderingMutant;
}

const orderNotFound = () => new AppError('ORDER_NOT_FOUND', 'No order with this id');

/**
 * Who may advance an order: its store's owner while the store is there, or its placer when a
 * fixture store has it.
 */
function mayAdvance(row: OrderRow, partnerId: string): boolean {
  if (row.store_partner_id === partnerId) return row.store_deleted_at === null;
  return row.partner_id === partnerId && isFixtureStoreOwner(row.store_partner_id);
}

/**
 * `POST /v1/test/orders/{orderId}/advance` (docs/guide/sandbox.md#advancing-an-order): moves a test
 * order as its store would, one step at a time through the status machine a store's change
 * uses, each step a version with its event (so webhooks flow); `cancelled` owes its refund as
 * a store's cancel does; `timeout` ends a pending order's acceptance window now, and the order is
 * cancelled and refunded by the platform exactly as the acceptance sweeper does.
 */
export function testAdvanceHandler(deps: TestAdvanceDeps): HandlerBinding {
  return handle(subjects.ordering.testAdvanceOrder, async ({ orderId, to }, ctx) => {
    const partnerId = requireTestPartner(ctx);
    const result = await deps.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('orders')
        .selectAll()
        .where('order_id', '=', orderId)
        .forUpdate()
        .executeTakeFirst();
      // Another partner's order, and every order of the other mode (its tenants are other
      // ids), answers as one that does not exist.
      if (!row || !mayAdvance(row, partnerId)) throw orderNotFound();
      const pending = { status: row.status, acceptBy: row.accept_by };
      if (to === 'timeout' || acceptanceEnded(pending, deps.clock())) {
        if (row.status !== 'pending') {
          throw new AppError(
            'ORDER_STATUS_TRANSITION_INVALID',
            `The order is ${row.state === 'open' ? row.status : row.state}; only a pending order times out`,
          );
        }
        const cancelled = await cancelNotAccepted(trx, row, deps);
        return { row: cancelled, moved: true, expired: to !== 'timeout' };
      }
      let current = row;
      for (const change of advanceChanges(row.status, row.fulfillment_mode, to)) {
        const outcome = applyOrderStatusChange(
          {
            state: current.state,
            status: current.status,
            fulfillmentMode: current.fulfillment_mode,
            estimatedReadyAt: current.estimated_ready_at?.toISOString() ?? null,
            cancelledBy: current.cancelled_by,
          },
          change,
        );
        if (outcome.kind === 'illegal') {
          throw new AppError('ORDER_STATUS_TRANSITION_INVALID', outcome.detail);
        }
        if (outcome.kind === 'unchanged') continue;
        // A cancel owes its refund in this transaction; the sweeper settles it after commit.
        current = await writeOrderMove(trx, current, outcome, deps);
      }
      return { row: current, moved: current !== row, expired: false };
    });
    if (result.moved) deps.nudge();
    if (result.moved && result.row.state === 'cancelled') deps.nudgeRefunds();
    if (result.expired) {
      // As a store's change after the deadline: the platform's cancel wins.
      throw new AppError(
        'ORDER_STATUS_TRANSITION_INVALID',
        'The order was not accepted in time; the platform cancelled it',
      );
    }
    const order: Order = toOrder(result.row);
    return order;
  });
}
