// The store's finished orders (completed or cancelled) as a table under the board.
import type { StoreOrder } from '../api.js';
import { formatInstant, formatMoney, orderLabel } from './format.js';

/** One kind of finished order, newest first as given, with More when there are more to read. */
export function FinishedList(props: {
  label: string;
  orders: readonly StoreOrder[];
  timeZone: string;
  more: (() => void) | undefined;
}) {
  const headingId = `finished-${props.label.toLowerCase()}`;
  return (
    <section class="card" aria-labelledby={headingId}>
      <h2 id={headingId}>{props.label}</h2>
      {props.orders.length === 0 ? (
        <p class="empty">None yet.</p>
      ) : (
        // Focusable: a keyboard scrolls the table sideways on a narrow screen.
        <div class="table-wrap" tabIndex={0} role="group" aria-labelledby={headingId}>
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Order</th>
                <th scope="col">Placed</th>
                <th scope="col">Total</th>
                <th scope="col">{props.label === 'Cancelled' ? 'Reason' : 'Items'}</th>
              </tr>
            </thead>
            <tbody>
              {props.orders.map((order) => (
                <tr key={order.orderId}>
                  <th scope="row">{orderLabel(order.orderId)}</th>
                  <td>{formatInstant(order.createdAt, props.timeZone)}</td>
                  <td>{formatMoney(order.amounts.total, order.amounts.currency)}</td>
                  <td>
                    {order.state === 'cancelled'
                      ? `${order.cancelReason ?? '—'}${order.cancelledBy === 'platform' ? ' (by the platform)' : ''}`
                      : order.cart.lineItems
                          .map((item) => `${item.quantity} × ${item.name ?? item.itemId}`)
                          .join(', ')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {props.more && (
        <button type="button" class="button link" onClick={props.more}>
          More {props.label.toLowerCase()} orders
        </button>
      )}
    </section>
  );
}
