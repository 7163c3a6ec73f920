import { events, type Order, type OrderEventKind, type OrderStatus } from '@pcp/contracts';
import {
  createdAtKey,
  insertOutboxEvents,
  olderThan,
  pageOf,
  type ListKey,
} from '@pcp/service-kit';
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';

import type {
  OrderingDatabase,
  OrderRefundRow,
  OrderRow,
  OrderStatusChangeRow,
} from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** An order row as partners see it, its fields always in this order. */
export function toOrder(row: OrderRow): Order {
  const { details } = row;
  return {
    orderId: row.order_id,
    storeId: row.store_id,
    isValid: true,
    errors: [],
    amounts: details.amounts,
    cart: details.cart,
    fulfillment: details.fulfillment,
    client: details.client,
    customer: details.customer,
    paymentType: details.paymentType,
    payment: details.payment,
    specialInstructions: details.specialInstructions,
    state: row.state,
    status: row.status,
    version: row.version,
    estimatedReadyAt: row.estimated_ready_at?.toISOString() ?? null,
    acceptBy: row.accept_by?.toISOString() ?? null,
    cancelReason: row.cancel_reason,
    cancelledBy: row.cancelled_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Record an order's change (in the caller's transaction, after the change locked the row): its
 * version in the order's status history (the timeline's), with the items that ran out when it
 * is a denial, and its next event in the outbox (the webhooks' source), one of each per version.
 */
export function recordOrderEvent(
  trx: Db,
  row: OrderRow,
  event: OrderEventKind,
  previousStatus: OrderStatus | null,
  prefix: string,
  unavailableItemIds?: readonly string[],
): Promise<void> {
  return recordOrderEvents(
    trx,
    [{ row, event, previousStatus, ...(unavailableItemIds ? { unavailableItemIds } : {}) }],
    prefix,
  );
}

/** One order's change as `recordOrderEvents` records it. */
export interface OrderChange {
  readonly row: OrderRow;
  readonly event: OrderEventKind;
  readonly previousStatus: OrderStatus | null;
  readonly unavailableItemIds?: readonly string[];
}

/**
 * `recordOrderEvent` for a batch of changes, each of another order that the caller's
 * transaction locked: one statement for their history rows, one for their events.
 */
export async function recordOrderEvents(
  trx: Db,
  changes: readonly OrderChange[],
  prefix: string,
): Promise<void> {
  if (changes.length === 0) return;
  await trx
    .insertInto('order_status_changes')
    .values(
      changes.map(({ row, previousStatus, unavailableItemIds }) =>
        statusChangeOf(row, previousStatus, unavailableItemIds),
      ),
    )
    .execute();
  await insertOutboxEvents(
    trx,
    changes.map(({ row, event, previousStatus }) =>
      orderEventOf(row, event, previousStatus, prefix),
    ),
  );
}

/** The status history's row of the order's version `row.version`. */
export function statusChangeOf(
  row: OrderRow,
  previousStatus: OrderStatus | null,
  unavailableItemIds?: readonly string[],
): OrderStatusChangeRow {
  return {
    order_id: row.order_id,
    version: row.version,
    state: row.state,
    status: row.status,
    previous_status: previousStatus,
    estimated_ready_at: row.estimated_ready_at,
    cancel_reason: row.cancel_reason,
    cancelled_by: row.cancelled_by,
    unavailable_item_ids: unavailableItemIds ? [...unavailableItemIds] : null,
    changed_at: row.updated_at,
  };
}

/** The outbox event of the order's version `row.version`. */
export function orderEventOf(
  row: OrderRow,
  event: OrderEventKind,
  previousStatus: OrderStatus | null,
  prefix: string,
) {
  return {
    subject: `${prefix}.${events.orderStatusChanged.subject}`,
    type: 'ordering.v1.order-status-changed' as const,
    aggregate: { type: 'order', id: row.order_id, version: row.version },
    occurredAt: row.updated_at,
    data: {
      event,
      orderId: row.order_id,
      storeId: row.store_id,
      partnerId: row.partner_id,
      storePartnerId: row.store_deleted_at === null ? row.store_partner_id : null,
      state: row.state,
      status: row.status,
      previousStatus,
      estimatedReadyAt: row.estimated_ready_at?.toISOString() ?? null,
      cancelReason: row.cancel_reason,
      cancelledBy: row.cancelled_by,
    },
  };
}

/**
 * A new order (version 1) as `row` has it, and its `order.created` event, in the caller's
 * transaction. Nothing is read back: the row is the caller's, and its details the bulk of it.
 */
export async function insertOrder(trx: Db, row: OrderRow, prefix: string): Promise<void> {
  await trx
    .insertInto('orders')
    .values({ ...row, details: JSON.stringify(row.details) })
    .execute();
  await recordOrderEvent(trx, row, 'order.created', null, prefix);
}

export function findOrder(db: Db, orderId: string): Promise<OrderRow | undefined> {
  return db.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirst();
}

/**
 * An order of the commerce partner's stores, locked until the transaction ends (the status
 * machine reads and moves it under the lock). Another partner's order is not locked either,
 * nor one whose store was deleted under it (`store_deleted_at`).
 */
export function lockStoreOrder(
  trx: Db,
  orderId: string,
  storePartnerId: string,
): Promise<OrderRow | undefined> {
  return trx
    .selectFrom('orders')
    .selectAll()
    .where('order_id', '=', orderId)
    .where('store_partner_id', '=', storePartnerId)
    .where('store_deleted_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}

/** What a status move writes; the version goes up by one. */
export interface OrderStatusUpdate {
  readonly state: OrderRow['state'];
  readonly status: OrderRow['status'];
  readonly updated_at: Date;
  readonly estimated_ready_at?: Date;
  readonly cancel_reason?: string;
  readonly cancelled_by?: 'store' | 'platform';
  /** Null once the order leaves pending: the deadline no longer applies. */
  readonly accept_by?: null;
}

/** The order's next version, its row locked by the caller's transaction. */
export function updateOrderStatus(
  trx: Db,
  row: OrderRow,
  update: OrderStatusUpdate,
): Promise<OrderRow> {
  return trx
    .updateTable('orders')
    .set({ ...update, version: row.version + 1 })
    .where('order_id', '=', row.order_id)
    .where('version', '=', row.version)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * One page of a store's orders (`newestFirst`) as its owner `storePartnerId` sees them: a store
 * id is the partner's choice and a reset frees it, so an order left from a deleted store of that
 * id (another owner's, or this owner's before its reset) is not among them.
 */
export async function listStoreOrders(
  db: Db,
  query: {
    storeId: string;
    storePartnerId: string;
    status?: OrderStatus;
    limit: number;
    after?: ListKey;
  },
): Promise<{ rows: OrderRow[]; next: ListKey | null }> {
  return newestFirst(
    db
      .selectFrom('orders')
      .selectAll()
      .select(createdAtKey.as('created_at_key'))
      .where('store_id', '=', query.storeId)
      .where('store_partner_id', '=', query.storePartnerId)
      .where('store_deleted_at', 'is', null),
    query,
  );
}

/** An order as the placing partner's list shows it: no details read. */
export type OrderSummaryRow = Pick<
  OrderRow,
  | 'order_id'
  | 'store_id'
  | 'state'
  | 'status'
  | 'total_minor'
  | 'currency'
  | 'created_at'
  | 'updated_at'
> & { created_at_key: string };

/** One page of the orders a distribution partner placed (`newestFirst`), without details. */
export async function listPartnerOrders(
  db: Db,
  query: { partnerId: string; status?: OrderStatus; limit: number; after?: ListKey },
): Promise<{ rows: OrderSummaryRow[]; next: ListKey | null }> {
  return newestFirst(
    db
      .selectFrom('orders')
      .select([
        'order_id',
        'store_id',
        'state',
        'status',
        'total_minor',
        'currency',
        'created_at',
        'updated_at',
        createdAtKey.as('created_at_key'),
      ])
      .where('partner_id', '=', query.partnerId),
    query,
  );
}

/**
 * One page of the orders `select` picks, newest first (created_at desc, order_id desc), all or
 * of one status, after `after` (a keyset on the list's indexes); `next` is the last order's key
 * when more follow.
 */
async function newestFirst<Row extends { order_id: string; created_at_key: string }>(
  select: SelectQueryBuilder<OrderingDatabase, 'orders', Row>,
  query: { status?: OrderStatus; limit: number; after?: ListKey },
): Promise<{ rows: Row[]; next: ListKey | null }> {
  let page = select;
  if (query.status) page = page.where('status', '=', query.status);
  if (query.after) page = page.where(olderThan(query.after, 'order_id'));
  const rows = await page
    .orderBy('created_at', 'desc')
    .orderBy('order_id', 'desc')
    .limit(query.limit + 1)
    .execute();
  return pageOf(rows, query.limit, (row) => row.order_id);
}

/**
 * At most `limit` versions of an order's status history, oldest first: its first two (placed,
 * and the store's answer to a pending order) and the most recent others; and how many it has
 * in all. Each part is a range of the history's key.
 */
export async function keptStatusChanges(
  db: Db,
  orderId: string,
  limit: number,
): Promise<{ rows: OrderStatusChangeRow[]; total: number }> {
  const { rows } = await sql<OrderStatusChangeRow & { total: number }>`
    select c.*,
           (select count(*)::int from order_status_changes every
             where every.order_id = ${orderId}) as total
      from order_status_changes c
     where c.order_id = ${orderId}
       and (c.version <= 2
            or c.version in (select recent.version from order_status_changes recent
                              where recent.order_id = ${orderId} and recent.version > 2
                              order by recent.version desc
                              limit ${limit - 2}))
     order by c.version
  `.execute(db);
  return { rows, total: rows[0]?.total ?? 0 };
}

/** The refunds an order owes or owed (a cancel's; one per cause), oldest first. */
export function orderRefunds(
  db: Db,
  orderId: string,
): Promise<Pick<OrderRefundRow, 'amount' | 'state' | 'settled_at'>[]> {
  return db
    .selectFrom('order_refunds')
    .select(['amount', 'state', 'settled_at'])
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .execute();
}
