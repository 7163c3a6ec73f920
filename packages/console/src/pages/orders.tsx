import { useState } from 'preact/hooks';
import { api, ok, type OrderSummary } from '../api.js';
import { formatInstant, formatMoney, orderStatusLabel } from '../components/format.js';
import { CursorPager, useCursorPages } from '../components/cursor-pages.js';
import { ProblemMessage } from '../components/problem.js';
import { liveLabel, useLiveEvents } from '../components/use-events.js';
import { useLoad } from '../components/use-load.js';
import { href } from '../router.js';

const PAGE = 25;
const ORDER_EVENTS = ['order.created', 'order.status_changed', 'order.cancelled'] as const;
type StatusFilter = NonNullable<OrderSummary['status']> | '';

/**
 * The orders the partner placed, newest first, a page at a time, all or of one status; the
 * first page follows the live stream (a new order or a move shows at once).
 */
export function OrdersPage() {
  const [status, setStatus] = useState<StatusFilter>('');
  const pages = useCursorPages();
  const before = pages.cursor;
  const orders = useLoad(
    () =>
      ok(
        api.GET('/v1/marketfront/orders', {
          params: {
            query: { limit: PAGE, ...(before ? { before } : {}), ...(status ? { status } : {}) },
          },
        }),
      ),
    `${status}|${before ?? ''}`,
  );
  const { firstPage } = pages;
  const live = useLiveEvents(
    firstPage ? '/v1/marketfront/events' : null,
    ORDER_EVENTS,
    orders.reload,
    orders.reload,
  );

  const list = orders.data;
  return (
    <section>
      <h1>Orders</h1>
      <div class="toolbar">
        <label class="inline-field">
          Status
          <select
            value={status}
            onChange={(event) => {
              setStatus(event.currentTarget.value as StatusFilter);
              pages.reset();
            }}
          >
            <option value="">All</option>
            {Object.entries(orderStatusLabel).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <p class="live-state" role="status">
          {firstPage ? liveLabel[live] : 'Live updates on the first page only'}
        </p>
      </div>
      <ProblemMessage error={orders.error} />
      {list && list.orders.length === 0 && (
        <p class="empty">
          {status
            ? `No ${orderStatusLabel[status]?.toLowerCase()} orders.`
            : 'No orders yet. Orders you place with POST /v1/marketfront/orders/place show here at once.'}
        </p>
      )}
      {list && list.orders.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Your orders, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Order</th>
                <th scope="col">Status</th>
                <th scope="col">Total</th>
                <th scope="col">Placed</th>
                <th scope="col" class="wide-only">
                  Store
                </th>
              </tr>
            </thead>
            <tbody>
              {list.orders.map((order) => (
                <tr key={order.orderId}>
                  <th scope="row">
                    <a href={href(`/orders/${order.orderId}`)}>
                      <code>{order.orderId.slice(0, 8)}</code>
                      <span class="visually-hidden"> (order {order.orderId})</span>
                    </a>
                  </th>
                  <td>
                    <span class={`badge order-${order.status}`}>
                      {orderStatusLabel[order.status] ?? order.status}
                    </span>
                  </td>
                  <td>{formatMoney(order.total, order.currency)}</td>
                  <td>{formatInstant(order.placedAt)}</td>
                  <td class="wide-only">
                    <code>{order.storeId}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list && <CursorPager pages={pages} nextCursor={list.nextCursor} />}
    </section>
  );
}
