// An order on the store's board: what was ordered, and the moves, denial or
// cancellation the store may make from its status.
import { useState } from 'preact/hooks';
import { api, ok, type OrderStatusChange, type StoreOrder } from '../api.js';
import { Countdown } from './countdown.js';
import { formatInstant, formatMoney, formatTime, orderLabel } from './format.js';
import { CancelForm } from './order-cancel-form.js';
import { useAction } from './use-action.js';

/** A status move the store may make, as a button shows it. */
interface Move {
  readonly label: string;
  readonly change: OrderStatusChange;
  readonly done: string;
}

/**
 * The moves the contract allows from where the order stands (docs/guide/orders.md#order-status),
 * cancelling aside: one step along the statuses, or finishing from ready (pickup) or inTransit
 * (delivery).
 */
function movesFrom(order: Pick<StoreOrder, 'state' | 'status' | 'fulfillment'>): Move[] {
  if (order.state !== 'open') return [];
  const delivery = order.fulfillment.mode === 'DELIVERY_BY_MERCHANT';
  switch (order.status) {
    case 'pending':
      return [{ label: 'Accept', change: { status: 'confirmed' }, done: 'Accepted.' }];
    case 'confirmed':
      return [{ label: 'Start preparing', change: { status: 'preparing' }, done: 'Preparing.' }];
    case 'preparing':
      return [{ label: 'Mark ready', change: { status: 'ready' }, done: 'Ready.' }];
    case 'ready':
      return delivery
        ? [{ label: 'Out for delivery', change: { status: 'inTransit' }, done: 'In transit.' }]
        : [{ label: 'Complete (picked up)', change: { state: 'completed' }, done: 'Completed.' }];
    case 'inTransit':
      return [
        { label: 'Complete (delivered)', change: { state: 'completed' }, done: 'Completed.' },
      ];
    default:
      return [];
  }
}

/** Whether the contract lets the store cancel the order: open and not yet in transit. */
const cancellable = (order: StoreOrder) => order.state === 'open' && order.status !== 'inTransit';

/** An order on the board, with the moves valid from its status; `onMoved` gets its answer. */
export function OrderCard(props: {
  order: StoreOrder;
  now: number;
  timeZone: string;
  onMoved: (order: StoreOrder) => void;
}) {
  const { order, now, timeZone } = props;
  const { run, pending, feedback } = useAction();
  /** The open form: deny (a pending order, with its items) or cancel. */
  const [form, setForm] = useState<'deny' | 'cancel' | null>(null);
  const label = orderLabel(order.orderId);
  const headingId = `order-${order.orderId}`;
  const formId = `order-form-${order.orderId}`;

  const send = async (change: OrderStatusChange, done: string) => {
    let answer: StoreOrder | undefined;
    const made = await run(async () => {
      answer = await ok(
        api.POST('/v1/commerce/orders/{orderId}/status', {
          params: { path: { orderId: order.orderId } },
          body: change,
        }),
      );
    }, done);
    if (made && answer) {
      setForm(null);
      props.onMoved(answer);
    }
  };

  const customer = order.customer;
  return (
    <article class={`order-card order-${order.status}`} aria-labelledby={headingId}>
      <header class="order-head">
        <h3 id={headingId}>Order {label}</h3>
        <span class="order-placed">{formatTime(order.createdAt, timeZone)}</span>
      </header>
      {order.status === 'pending' && order.acceptBy && (
        <Countdown deadline={order.acceptBy} now={now} timeZone={timeZone} />
      )}
      <p class="order-meta">
        {order.fulfillment.mode === 'PICKUP' ? 'Pickup' : 'Delivery'}
        {order.fulfillment.scheduleType === 'SCHEDULED'
          ? ` · for ${formatInstant(order.fulfillment.scheduledTime, timeZone)}`
          : ' · ASAP'}
        {customer && ` · ${customer.firstName} ${customer.lastName}`}
      </p>
      <ul class="order-items" aria-label={`Items of order ${label}`}>
        {order.cart.lineItems.map((item) => (
          <li key={item.lineItemId}>
            <span class="order-qty">{item.quantity} ×</span> {item.name ?? item.itemId}
            {item.modifierGroups.flatMap((group) => group.lineItems).length > 0 && (
              <span class="muted">
                {' '}
                (
                {item.modifierGroups
                  .flatMap((group) => group.lineItems)
                  .map((choice) => choice.name ?? choice.itemId)
                  .join(', ')}
                )
              </span>
            )}
          </li>
        ))}
      </ul>
      <p class="order-total">
        Total <strong>{formatMoney(order.amounts.total, order.amounts.currency)}</strong>
        {order.paymentType === 'PAY_AT_STORE' && <span class="muted"> · pay at the store</span>}
      </p>
      {order.specialInstructions && (
        <p class="order-note">
          <span class="order-note-label">Customer notes:</span> {order.specialInstructions}
        </p>
      )}
      {order.fulfillment.instructions && (
        <p class="order-note">
          <span class="order-note-label">Delivery notes:</span> {order.fulfillment.instructions}
        </p>
      )}
      {order.estimatedReadyAt && (
        <p class="subtle">Ready by {formatTime(order.estimatedReadyAt, timeZone)}</p>
      )}
      {order.state === 'cancelled' && order.cancelReason && (
        <p class="subtle">Cancelled: {order.cancelReason}</p>
      )}
      <div class="order-actions">
        {movesFrom(order).map((move) => (
          <button
            key={move.label}
            type="button"
            class="button primary"
            disabled={pending}
            onClick={() => void send(move.change, `Order ${label}: ${move.done}`)}
          >
            {move.label}
          </button>
        ))}
        {order.status === 'pending' && (
          <button
            type="button"
            class="button danger"
            aria-expanded={form === 'deny'}
            aria-controls={form === 'deny' ? formId : undefined}
            disabled={pending}
            onClick={() => setForm(form === 'deny' ? null : 'deny')}
          >
            Deny
          </button>
        )}
        {order.status !== 'pending' && cancellable(order) && (
          <button
            type="button"
            class="button secondary"
            aria-expanded={form === 'cancel'}
            aria-controls={form === 'cancel' ? formId : undefined}
            disabled={pending}
            onClick={() => setForm(form === 'cancel' ? null : 'cancel')}
          >
            Cancel order
          </button>
        )}
      </div>
      {form && (
        <CancelForm
          id={formId}
          order={order}
          deny={form === 'deny'}
          disabled={pending}
          onClose={() => setForm(null)}
          onSubmit={(change) =>
            void send(
              change,
              `Order ${label}: ${form === 'deny' ? 'denied' : 'cancelled'}; the customer is refunded.`,
            )
          }
        />
      )}
      {feedback}
    </article>
  );
}
