// The form that cancels an order, or denies a pending one naming the items that ran out.
import type { OrderStatusChange, StoreOrder } from '../api.js';
import { fieldText } from './form.js';
import { orderLabel } from './format.js';

/**
 * Cancelling with a reason; a denial (of a pending order) may also name the items that ran
 * out, checked among the order's own, which become unavailable until the store's day ends.
 */
export function CancelForm(props: {
  id: string;
  order: StoreOrder;
  deny: boolean;
  disabled: boolean;
  onClose: () => void;
  onSubmit: (change: OrderStatusChange) => void;
}) {
  const { order, deny } = props;
  const reasonId = `${props.id}-reason`;
  // One checkbox per item, even if the cart holds it on several lines.
  const items = [
    ...new Map(order.cart.lineItems.map((item) => [item.itemId, item.name ?? item.itemId])),
  ];
  return (
    <form
      id={props.id}
      class="order-form"
      aria-label={`${deny ? 'Deny' : 'Cancel'} order ${orderLabel(order.orderId)}`}
      onSubmit={(event) => {
        event.preventDefault();
        const form = event.currentTarget;
        const unavailable = new FormData(form)
          .getAll('unavailable')
          .filter((value): value is string => typeof value === 'string');
        props.onSubmit({
          state: 'cancelled',
          cancelReason: fieldText(form, 'reason').trim(),
          ...(unavailable.length > 0 ? { unavailableItemIds: unavailable } : {}),
        });
      }}
    >
      <label for={reasonId}>Reason (sent to the ordering partner)</label>
      <input id={reasonId} name="reason" required maxLength={500} />
      {deny && items.length > 0 && (
        <fieldset class="choices">
          <legend>Items that ran out (off until tonight)</legend>
          {items.map(([itemId, name]) => (
            <label key={itemId} class="checkbox">
              <input type="checkbox" name="unavailable" value={itemId} />
              {name}
            </label>
          ))}
        </fieldset>
      )}
      <div class="order-actions">
        <button type="submit" class="button danger" disabled={props.disabled}>
          {deny ? 'Deny order' : 'Cancel order and refund'}
        </button>
        <button type="button" class="button ghost" onClick={props.onClose}>
          Keep order
        </button>
      </div>
    </form>
  );
}
