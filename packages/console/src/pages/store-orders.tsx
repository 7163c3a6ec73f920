import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Store, type StoreOrder } from '../api.js';
import { useNow } from '../components/countdown.js';
import { FinishedList } from '../components/finished-orders.js';
import { orderLabel, orderStatusLabel } from '../components/format.js';
import { OrderCard } from '../components/order-card.js';
import { ProblemMessage, problemOf } from '../components/problem.js';
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
