import {
  fromMinorUnits,
  orderTimelineLimits,
  subjects,
  type Order,
  type OrderStatusChange,
} from '@pcp/contracts';
import {
  AppError,
  decodeCursor,
  encodeCursor,
  handle,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import {
  findOrder,
  listPartnerOrders,
  listStoreOrders,
  lockStoreOrder,
  keptStatusChanges,
  orderRefunds,
  toOrder,
} from './order.repository.js';
import { orderTimelineOf } from './order-timeline.js';
import { recentOrderAttempts } from '../webhooks/delivery-attempts.repository.js';
import type { OrderingMutant } from '../config.js';
import type { OrderingDatabase, OrderRow } from '../db/ordering.table.js';
import { acceptanceEnded } from './acceptance-window.js';
import { cancelNotAccepted } from './acceptance-sweeper.js';
import { writeOrderMove } from './order-move.js';
import { applyOrderStatusChange } from './order-status.js';

export interface OrderLifecycleDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly bus: BusClient;
  readonly clock: () => Date;
  /** The deployment's subject prefix (the outbox's event subjects carry it). */
  readonly prefix: string;
  /** Publish the outbox now (after a commit that wrote an event). */
  readonly nudge: () => void;
  /** Ask payments for owed refunds now (after a commit that cancelled a card order). */
  readonly nudgeRefunds: () => void;
  /** Test-only: the fault suite's planted defect (`ORDERING_TEST_MUTANT`). */
  readonly mutant?: OrderingMutant;
}

const orderNotFound = () => new AppError('ORDER_NOT_FOUND', 'No order with this id');

/** What a status change did to the order it locked. */
export type StatusChangeOutcome =
  | { kind: 'moved'; row: OrderRow }
  | { kind: 'unchanged'; row: OrderRow }
  /** Past its acceptance window: the platform cancelled it instead. */
  | { kind: 'expired' };

/**
 * Stores' moves of orders along the status machine (docs/guide/orders.md#order-status). Every
 * move is a new version whose event goes out through the outbox.
 */
export function createOrderStatusChanges(deps: OrderLifecycleDeps) {
  const { db, bus } = deps;

  async function changeStatus(
    orderId: string,
    change: OrderStatusChange,
    ctx: RequestContext,
  ): Promise<Order> {
    const partnerId = requirePartner(ctx, 'commerce');
    const result = await db.transaction().execute(async (trx) => {
      // Another partner's order is not found, like one that does not exist
      // (docs/guide/authentication.md).
      const current = await lockStoreOrder(trx, orderId, partnerId);
      if (!current) throw orderNotFound();
      return changeLockedOrder(trx, current, change, ctx);
    });
    if (result.kind === 'unchanged') return toOrder(result.row);
    deps.nudge();
    if (result.kind === 'expired' || result.row.state === 'cancelled') deps.nudgeRefunds();
    if (result.kind === 'expired') {
      throw new AppError(
        'ORDER_STATUS_TRANSITION_INVALID',
        'The order was not accepted in time; the platform cancelled it',
      );
    }
    return toOrder(result.row);
  }

  /**
   * A store's status change of an order whose row `trx` holds locked: the commerce partner's
   * PATCH, and the fixture kitchen's steps (docs/guide/sandbox.md#the-kitchen). The caller
   * publishes the outbox after commit unless the outcome is `unchanged`.
   */
  async function changeLockedOrder(
    trx: Kysely<OrderingDatabase>,
    current: OrderRow,
    change: OrderStatusChange,
    ctx: RequestContext,
  ): Promise<StatusChangeOutcome> {
    // The deadline wins (docs/guide/orders.md#acceptance-window): a move that comes after it
    // cancels the order as the sweeper would, and is refused once that commits.
    if (acceptanceEnded({ status: current.status, acceptBy: current.accept_by }, deps.clock())) {
      await cancelNotAccepted(trx, current, deps);
      return { kind: 'expired' as const };
    }
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
    // A cancel sent again answers as the first did (its items were marked then).
    if (outcome.kind === 'unchanged') return { kind: 'unchanged' as const, row: current };
    // Items that ran out deny a pending order only (docs/guide/orders.md#denying-an-order).
    if (change.unavailableItemIds !== undefined && current.status !== 'pending') {
      throw new AppError(
        'ORDER_STATUS_TRANSITION_INVALID',
        `The order is ${current.status}; only a pending order is denied with unavailableItemIds`,
      );
    }
    // Before the cancel: items stores refuses (not in the active catalog) refuse it.
    if (change.unavailableItemIds !== undefined) {
      await denyItems(current.store_id, change.unavailableItemIds, ctx);
    }
    // A cancel owes its refund in this transaction (writeOrderMove); the refund sweeper asks
    // payments for it once this commits, so the store's answer never waits on the processor.
    return { kind: 'moved' as const, row: await writeOrderMove(trx, current, outcome, deps) };
  }

  /** Mark the items unavailable for the rest of the store's day; their errors point at the body. */
  async function denyItems(
    storeId: string,
    itemIds: readonly string[],
    ctx: RequestContext,
  ): Promise<void> {
    try {
      await bus.request(subjects.stores.denyItems, { storeId, itemIds: [...itemIds] }, ctx);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'REQUEST_INVALID') throw error;
      throw new AppError('REQUEST_INVALID', error.message, {
        errors: (error.errors ?? []).map((item) => ({
          ...item,
          pointer: item.pointer?.replace(/^\/itemIds\//, '/unavailableItemIds/') ?? null,
        })),
        errorsOmitted: error.errorsOmitted,
      });
    }
  }

  return { changeStatus, changeLockedOrder };
}

/**
 * The order's life after place (docs/guide/orders.md#order-status): the placing distribution
 * partner reads it, the commerce partner owning its store lists its store's orders and moves them
 * along the status machine.
 */
export function orderLifecycleHandlers(deps: OrderLifecycleDeps): HandlerBinding[] {
  const { db, bus } = deps;
  const { changeStatus } = createOrderStatusChanges(deps);
  return [
    handle(subjects.ordering.getOrder, async ({ orderId }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const row = await findOrder(db, orderId);
      // Another partner's order answers as an unknown one: ids cannot be probed.
      if (!row || row.partner_id !== partnerId) throw orderNotFound();
      return toOrder(row);
    }),

    handle(subjects.ordering.listOrders, async ({ status, limit, before }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const after = before === undefined ? undefined : decodeCursor(before, 'before');
      const page = await listPartnerOrders(db, {
        partnerId,
        limit,
        ...(status ? { status } : {}),
        ...(after ? { after } : {}),
      });
      return {
        orders: page.rows.map((row) => ({
          orderId: row.order_id,
          storeId: row.store_id,
          state: row.state,
          status: row.status,
          total: fromMinorUnits(Number(row.total_minor), row.currency),
          currency: row.currency,
          placedAt: row.created_at.toISOString(),
          updatedAt: row.updated_at.toISOString(),
        })),
        ...(page.next ? { nextCursor: encodeCursor(page.next) } : {}),
      };
    }),

    handle(subjects.ordering.orderTimeline, async ({ orderId }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const order = await findOrder(db, orderId);
      if (!order || order.partner_id !== partnerId) throw orderNotFound();
      const [changes, attempts, refunds] = await Promise.all([
        keptStatusChanges(db, orderId, orderTimelineLimits.statusEvents),
        recentOrderAttempts(db, {
          orderId,
          partnerId,
          limit: orderTimelineLimits.webhookAttempts,
        }),
        orderRefunds(db, orderId),
      ]);
      const omitted = changes.total - changes.rows.length + (attempts.total - attempts.rows.length);
      return {
        orderId,
        events: orderTimelineOf(order, changes.rows, attempts.rows, refunds),
        ...(omitted > 0 ? { eventsOmitted: omitted } : {}),
      };
    }),

    handle(subjects.ordering.listStoreOrders, async (query, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      // 404 STORE_NOT_FOUND unless the store is the caller's (docs/guide/authentication.md).
      await bus.request(subjects.stores.get, { storeId: query.storeId }, ctx);
      const page = await listStoreOrders(db, {
        storeId: query.storeId,
        storePartnerId: partnerId,
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
