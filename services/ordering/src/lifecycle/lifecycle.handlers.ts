import { subjects, type Order, type OrderStatusChange } from '@pcp/contracts';
import {
  AppError,
  handle,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import {
  findOrder,
  listStoreOrders,
  lockStoreOrder,
  recordOrderEvent,
  toOrder,
  updateOrderStatus,
} from './order.repository.js';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { applyOrderStatusChange, type OrderMove } from './order-status.js';
import { decodeCursor, encodeCursor } from '../db/list-cursor.js';

export interface OrderLifecycleDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly bus: BusClient;
  readonly clock: () => Date;
  /** The deployment's subject prefix (the outbox's event subjects carry it). */
  readonly prefix: string;
  /** Publish the outbox now (after a commit that wrote an event). */
  readonly nudge: () => void;
  /** How long a cancel's refund may take (default: the bus's timeout). */
  readonly paymentsTimeoutMs?: number;
}

const orderNotFound = () => new AppError('ORDER_NOT_FOUND', 'No order with this id');

/**
 * The order's life after place (docs/guide/orders.md#order-status): the placing distribution
 * partner reads it, the commerce partner owning its store lists its store's orders and moves them
 * along the status machine. Every move is a new version whose event goes out through the outbox.
 */
export function orderLifecycleHandlers(deps: OrderLifecycleDeps): HandlerBinding[] {
  const { db, bus } = deps;

  /**
   * Refund a cancelled card order's captured total, under the order's lock: the key is the
   * order's, so a retried cancel (after a failed commit) never refunds twice.
   */
  async function refund(row: OrderRow, ctx: RequestContext): Promise<void> {
    const { details } = row;
    const amount = Number(row.total_minor);
    if (details.paymentType !== 'CARD' || row.charge_id === null || amount <= 0) return;
    // Ordering is trusted inside the platform: it asks payments on behalf of the partner
    // that placed the order (payments finds charges by that partner), not of the store.
    const placer: RequestContext = {
      requestId: ctx.requestId,
      partnerId: row.partner_id,
      partnerKind: 'distribution',
      endUserId: row.end_user_id,
      ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
      ...(ctx.tracestate ? { tracestate: ctx.tracestate } : {}),
    };
    await bus.request(
      subjects.payments.refund,
      { chargeId: row.charge_id, amount, idempotencyKey: `order-cancel-${row.order_id}` },
      placer,
      deps.paymentsTimeoutMs === undefined ? undefined : { timeoutMs: deps.paymentsTimeoutMs },
    );
  }

  /** Apply a legal move to the locked row: its next version and that version's event. */
  async function write(trx: Kysely<OrderingDatabase>, row: OrderRow, move: OrderMove) {
    const updated = await updateOrderStatus(trx, row, {
      state: move.state,
      status: move.status,
      updated_at: deps.clock(),
      ...(move.estimatedReadyAt === undefined
        ? {}
        : { estimated_ready_at: new Date(move.estimatedReadyAt) }),
      ...(move.cancelReason === undefined ? {} : { cancel_reason: move.cancelReason }),
    });
    await recordOrderEvent(trx, updated, move.event, move.previousStatus, deps.prefix);
    return updated;
  }

  async function changeStatus(
    orderId: string,
    change: OrderStatusChange,
    ctx: RequestContext,
  ): Promise<Order> {
    const partnerId = requirePartner(ctx, 'commerce');
    const { row, moved } = await db.transaction().execute(async (trx) => {
      // Another partner's order is not found, like one that does not exist
      // (docs/guide/authentication.md).
      const current = await lockStoreOrder(trx, orderId, partnerId);
      if (!current) throw orderNotFound();
      const outcome = applyOrderStatusChange(
        {
          state: current.state,
          status: current.status,
          fulfillmentMode: current.fulfillment_mode,
          estimatedReadyAt: current.estimated_ready_at?.toISOString() ?? null,
        },
        change,
      );
      if (outcome.kind === 'illegal') {
        throw new AppError('ORDER_STATUS_TRANSITION_INVALID', outcome.detail);
      }
      if (outcome.kind === 'unchanged') return { row: current, moved: false };
      // Before commit and under the lock: a failed refund rolls the cancel back and its
      // error goes to the store, which may retry; no other change can slip in meanwhile.
      if (outcome.event === 'order.cancelled') await refund(current, ctx);
      return { row: await write(trx, current, outcome), moved: true };
    });
    if (moved) deps.nudge();
    return toOrder(row);
  }

  return [
    handle(subjects.ordering.getOrder, async ({ orderId }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const row = await findOrder(db, orderId);
      // Another partner's order answers as an unknown one: ids cannot be probed.
      if (!row || row.partner_id !== partnerId) throw orderNotFound();
      return toOrder(row);
    }),

    handle(subjects.ordering.listStoreOrders, async (query, ctx) => {
      requirePartner(ctx, 'commerce');
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      // 404 STORE_NOT_FOUND unless the store is the caller's (docs/guide/authentication.md).
      await bus.request(subjects.stores.get, { storeId: query.storeId }, ctx);
      const page = await listStoreOrders(db, {
        storeId: query.storeId,
        limit: query.limit,
        ...(query.status ? { status: query.status } : {}),
        ...(after ? { after } : {}),
      });
      return {
        orders: page.rows.map(toOrder),
        nextCursor: page.next ? encodeCursor(page.next) : null,
      };
    }),

    handle(subjects.ordering.changeOrderStatus, ({ orderId, change }, ctx) =>
      changeStatus(orderId, change, ctx),
    ),
  ];
}
