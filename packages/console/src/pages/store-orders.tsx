import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Store, type StoreOrder, type OrderStatusChange } from '../api.js';
import { formatInstant, formatMoney, formatTime, orderStatusLabel } from '../components/format.js';
import { fieldText } from '../components/form.js';
import { ProblemMessage, problemOf } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { liveLabel, useLiveEvents, type LiveEvent } from '../components/use-events.js';

type Status = StoreOrder['status'];

/** The board's lanes: the open statuses, in the order an order goes through them. */
const lanes: readonly { status: Status; label: string }[] = [
  { status: 'pending', label: 'Pending' },
  { status: 'confirmed', label: 'Confirmed' },
  { status: 'preparing', label: 'Preparing' },
  { status: 'ready', label: 'Ready' },
  { status: 'inTransit', label: 'In transit' },
];

/** Finished orders, listed under the board (newest first). */
const finished: readonly { status: Status; label: string }[] = [
  { status: 'completed', label: 'Completed' },
  { status: 'cancelled', label: 'Cancelled' },
];

const PAGE = 20;
const ORDER_EVENTS = ['order.created', 'order.status_changed', 'order.cancelled'] as const;

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

/** The short name of an order on the board: the end of its id. */
const orderLabel = (orderId: string) => `#${orderId.slice(-6).toUpperCase()}`;

type Orders = Readonly<Record<string, StoreOrder>>;

/** `current` with `incoming` added, each order at the highest version seen (an older one never wins). */
function merge(current: Orders, incoming: readonly StoreOrder[]): Orders {
  const next = { ...current };
  for (const order of incoming) {
    const known = next[order.orderId];
    if (!known || known.version < order.version) next[order.orderId] = order;
  }
  return next;
}

/** mm:ss left until `deadline` (00:00 once passed). */
function countdown(deadline: number, now: number): string {
  const seconds = Math.max(0, Math.ceil((deadline - now) / 1_000));
  return `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
}

/**
 * The store's order board: open orders in a column per status (one list on a phone), pending
 * ones counting down to their acceptance deadline, each with the moves valid from its status;
 * kept current by the store's live events (docs/guide/live-events.md), never by polling.
 */
export function StoreOrders({ store }: { store: Store }) {
  const storeId = store.storeId;
  const [orders, setOrders] = useState<Orders>({});
  const [cursors, setCursors] = useState<Partial<Record<Status, string | null>>>({});
  const [loaded, setLoaded] = useState(false);
  const [loadError, setLoadError] = useState<ReturnType<typeof problemOf>>();
  /** What changed last, announced politely (new orders, moves, timeouts). */
  const [announcement, setAnnouncement] = useState('');
  const ordersRef = useRef(orders);
  ordersRef.current = orders;

  const page = (status: Status, cursor?: string) =>
    ok(
      api.GET('/v1/commerce/stores/{storeId}/orders', {
        params: {
          path: { storeId },
          query: { status, limit: PAGE, ...(cursor ? { cursor } : {}) },
        },
      }),
    );

  /** Every lane's first page. */
  const readAll = async () => {
    try {
      const all = [...lanes, ...finished];
      const pages = await Promise.all(all.map((lane) => page(lane.status)));
      setLoadError(undefined);
      // Merged, never replacing: an order an event brought while this read was on its way, or
      // a page read with More, stays; each order keeps the highest version seen.
      setOrders((current) =>
        merge(
          current,
          pages.flatMap((answer) => answer.orders),
        ),
      );
      setCursors(Object.fromEntries(all.map((lane, i) => [lane.status, pages[i]!.nextCursor])));
      setLoaded(true);
    } catch (failure) {
      setLoadError(problemOf(failure));
    }
  };

  const more = async (status: Status) => {
    const cursor = cursors[status];
    if (!cursor) return;
    try {
      const answer = await page(status, cursor);
      setOrders((current) => merge(current, answer.orders));
      setCursors((current) => ({ ...current, [status]: answer.nextCursor }));
    } catch (failure) {
      setLoadError(problemOf(failure));
    }
  };

  /** An order the board does not hold yet (new, or beyond the pages read): read its lane. */
  const fetchLane = async (status: Status) => {
    try {
      const answer = await page(status);
      setOrders((current) => merge(current, answer.orders));
    } catch (failure) {
      setLoadError(problemOf(failure));
    }
  };

  const onEvent = (event: LiveEvent) => {
    const data = event.data as Partial<
      Pick<
        StoreOrder,
        | 'orderId'
        | 'state'
        | 'status'
        | 'version'
        | 'estimatedReadyAt'
        | 'cancelReason'
        | 'cancelledBy'
      >
    >;
    if (typeof data.orderId !== 'string' || typeof data.version !== 'number' || !data.status) {
      return;
    }
    const { orderId, version, status } = data;
    const known = ordersRef.current[orderId];
    if (!known) {
      if (event.type === 'order.created') setAnnouncement(`New order ${orderLabel(orderId)}.`);
      void fetchLane(status);
      return;
    }
    if (known.version >= version) return; // older than what the board shows
    setOrders((current) => {
      const order = current[orderId];
      if (!order || order.version >= version) return current;
      return {
        ...current,
        [orderId]: {
          ...order,
          version,
          status,
          state: data.state ?? order.state,
          estimatedReadyAt: data.estimatedReadyAt ?? order.estimatedReadyAt,
          cancelReason: data.cancelReason ?? order.cancelReason,
          cancelledBy: data.cancelledBy ?? order.cancelledBy,
          acceptBy: status === 'pending' ? order.acceptBy : null,
        },
      };
    });
    setAnnouncement(
      data.cancelledBy === 'platform'
        ? `Order ${orderLabel(orderId)} was cancelled: not accepted in time.`
        : `Order ${orderLabel(orderId)} is ${(orderStatusLabel[status] ?? status).toLowerCase()}.`,
    );
  };

  // Read at once (the board shows even while its stream cannot open), and again on every open.
  useEffect(() => void readAll(), [storeId]);
  const live = useLiveEvents(
    `/v1/commerce/stores/${storeId}/events`,
    ORDER_EVENTS,
    onEvent,
    () => void readAll(),
  );

  /** Apply what a move answered (the event that follows is then older, and ignored). */
  const moved = (order: StoreOrder) => setOrders((current) => merge(current, [order]));

  const all = Object.values(orders);
  const pendingDeadlines = all.some((order) => order.status === 'pending' && order.acceptBy);
  const now = useNow(pendingDeadlines);

  return (
    <div class="board-page">
      <div class="board-bar">
        <p class={`live-state live-${live}`} role="status">
          <span class="live-dot" aria-hidden="true" />
          {liveLabel[live]}
        </p>
        <p class="visually-hidden" role="status" aria-live="polite">
          {announcement}
        </p>
      </div>
      <ProblemMessage error={loadError} />
      {!loaded && !loadError && <p aria-busy="true">Loading orders…</p>}
      {loaded && (
        <>
          {/* Focusable: a keyboard scrolls the columns sideways when they overflow. */}
          <div class="board" aria-label="Open orders" role="region" tabIndex={0}>
            {lanes
              .filter(
                (lane) =>
                  lane.status !== 'inTransit' ||
                  store.fulfillmentTypes.includes('DELIVERY_BY_MERCHANT') ||
                  all.some((order) => order.status === 'inTransit'),
              )
              .map((lane) => {
                const inLane = all
                  .filter((order) => order.status === lane.status)
                  .sort(laneOrder(lane.status));
                const headingId = `lane-${lane.status}`;
                return (
                  <section key={lane.status} class="lane" aria-labelledby={headingId}>
                    <h2 id={headingId} class="lane-heading">
                      {lane.label} <span class="lane-count">{inLane.length}</span>
                    </h2>
                    {inLane.length === 0 ? (
                      <p class="lane-empty">No {lane.label.toLowerCase()} orders.</p>
                    ) : (
                      <ul class="lane-list">
                        {inLane.map((order) => (
                          <li key={order.orderId}>
                            <OrderCard
                              order={order}
                              now={now}
                              timeZone={store.timezone}
                              onMoved={moved}
                            />
                          </li>
                        ))}
                      </ul>
                    )}
                    {cursors[lane.status] && (
                      <button
                        type="button"
                        class="button link"
                        onClick={() => void more(lane.status)}
                      >
                        More {lane.label.toLowerCase()} orders
                      </button>
                    )}
                  </section>
                );
              })}
          </div>
          <div class="finished">
            {finished.map((lane) => (
              <FinishedList
                key={lane.status}
                label={lane.label}
                orders={all.filter((order) => order.status === lane.status).sort(newestFirst)}
                timeZone={store.timezone}
                more={cursors[lane.status] ? () => void more(lane.status) : undefined}
              />
            ))}
          </div>
        </>
      )}
    </div>
  );
}

const newestFirst = (a: StoreOrder, b: StoreOrder) => b.createdAt.localeCompare(a.createdAt);

/** Pending orders by their deadline (the most urgent first); the others first come, first served. */
function laneOrder(status: Status) {
  return (a: StoreOrder, b: StoreOrder) =>
    status === 'pending'
      ? (a.acceptBy ?? '').localeCompare(b.acceptBy ?? '')
      : a.createdAt.localeCompare(b.createdAt);
}

/** The time now, ticking every second while `ticking` (a pending order counts down). */
function useNow(ticking: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!ticking) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [ticking]);
  return now;
}

function OrderCard(props: {
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

/**
 * The time left to accept, mm:ss, updated every second but hidden from screen readers: they
 * read the deadline once, as a time, rather than a number announced every second.
 */
function Countdown(props: { deadline: string; now: number; timeZone: string }) {
  const { deadline, now } = props;
  const at = Date.parse(deadline);
  const left = at - now;
  const urgent = left < 60_000;
  return (
    <p class={`countdown${urgent ? ' countdown-urgent' : ''}`}>
      <span class="countdown-label" aria-hidden="true">
        Accept within
      </span>{' '}
      <span class="countdown-time" aria-hidden="true" data-testid="countdown">
        {countdown(at, now)}
      </span>
      <span class="visually-hidden">
        {left > 0 ? 'Accept by ' : 'The time to accept ran out at '}
        <time dateTime={deadline}>{formatTime(deadline, props.timeZone)}</time>
        {urgent && left > 0 ? ', less than a minute left' : ''}
      </span>
    </p>
  );
}

/**
 * Cancelling with a reason; a denial (of a pending order) may also name the items that ran
 * out, checked among the order's own, which become unavailable until the store's day ends.
 */
function CancelForm(props: {
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

function FinishedList(props: {
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
