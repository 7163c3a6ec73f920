import { useRef, useState } from 'preact/hooks';
import {
  api,
  ok,
  type MarketStore,
  type Order,
  type OrderSummary,
  type Session,
  type TestResetResult,
} from '../api.js';
import { placeFixtureOrder } from '../components/fixture-order.js';
import { formatInstant, formatMoney } from '../components/format.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { liveLabel, useLiveEvents, type LiveEvent } from '../components/use-events.js';
import { useLoad } from '../components/use-load.js';

/**
 * The platform's fixture stores (docs/guide/sandbox.md#fixture-stores): the same ids on every
 * deployment, New York, London and Tokyo; the page reads each from the API.
 */
const fixtureStoreIds = [
  '00000000-0000-4000-8000-0000000f1001',
  '00000000-0000-4000-8000-0000000f1002',
  '00000000-0000-4000-8000-0000000f1003',
] as const;

/** Every webhook type the stream carries (pcp.stream_opened, which names the secret, aside). */
const webhookTypes = [
  'order.created',
  'order.status_changed',
  'order.cancelled',
  'store.status_changed',
  'store.hours_changed',
  'store.items_availability_changed',
  'catalog.activated',
] as const;

/** Stream events kept in memory, newest first: the oldest go beyond this. */
const STREAM_CAP = 200;
const ORDERS_SHOWN = 10;

const advanceTargets = [
  ['confirmed', 'Confirmed'],
  ['preparing', 'Preparing'],
  ['ready', 'Ready'],
  ['inTransit', 'In transit (delivery)'],
  ['completed', 'Completed'],
  ['cancelled', 'Cancelled by the store'],
  ['timeout', 'Acceptance window passed (timeout)'],
] as const;
type AdvanceTarget = (typeof advanceTargets)[number][0];

/**
 * The sandbox of a test-mode session (docs/guide/sandbox.md). A distribution partner's: the
 * fixture stores with a button placing a test order at each, its test orders with the advance
 * helper, its test webhooks as they arrive on the webhook stream, and the reset. A commerce
 * partner's: its test stores with a button placing a customer's test order at each (the test
 * helper), the orders placed here with the advance helper, and the reset.
 */
export function SandboxPage({ session }: { session: Session }) {
  return (
    <section>
      <h1>Sandbox</h1>
      <p class="muted">
        Test mode only: nothing here is real, and nothing here reaches your live data.
      </p>
      {session.kind === 'distribution' ? <DistributionSandbox /> : <CommerceSandbox />}
    </section>
  );
}

function DistributionSandbox() {
  const orders = useLoad(
    () => ok(api.GET('/v1/marketfront/orders', { params: { query: { limit: ORDERS_SHOWN } } })),
    '',
  );
  const [events, setEvents] = useState<readonly StreamEvent[]>([]);
  const live = useLiveEvents(
    '/v1/marketfront/webhooks/stream',
    webhookTypes,
    (event) => {
      const shown = streamEventOf(event);
      if (!shown) return;
      setEvents((previous) => [shown, ...previous].slice(0, STREAM_CAP));
      if (shown.type.startsWith('order.')) orders.reload();
    },
    // The stream resumes after its last event (EventSource sends Last-Event-ID): nothing is
    // missed, but the orders may have moved while it was down.
    () => orders.reload(),
  );

  return (
    <div class="panel-stack">
      <p class="muted">
        Orders at the fixture stores move on by themselves within about a minute; the helpers move
        them at once.
      </p>
      <FixtureStores onPlaced={orders.reload} />
      <article class="card" aria-labelledby="test-orders">
        <h2 id="test-orders">Your latest test orders</h2>
        <ProblemMessage error={orders.error} />
        {orders.data && orders.data.orders.length === 0 && (
          <p class="empty">No test orders yet: place one at a fixture store above.</p>
        )}
        {orders.data && orders.data.orders.length > 0 && (
          <ul class="list">
            {orders.data.orders.map((order) => (
              <TestOrder key={order.orderId} order={order} onMoved={() => orders.reload()} />
            ))}
          </ul>
        )}
      </article>
      <WebhookStream events={events} state={live} />
      <Reset
        onReset={() => {
          setEvents([]);
          orders.reload();
        }}
      />
    </div>
  );
}

/** Test orders placed from this page, newest first (the answers of the helpers). */
function CommerceSandbox() {
  const stores = useLoad(
    () => ok(api.GET('/v1/commerce/stores', { params: { query: { limit: 50 } } })),
    '',
  );
  const [placed, setPlaced] = useState<readonly OrderSummary[]>([]);
  const upsert = (order: Order) =>
    setPlaced((previous) => [
      summaryOf(order),
      ...previous.filter((known) => known.orderId !== order.orderId),
    ]);
  return (
    <div class="panel-stack">
      <article class="card" aria-labelledby="test-stores">
        <h2 id="test-stores">Your test stores</h2>
        <p class="muted">
          The platform&apos;s sandbox customer places an order at your store through the real
          validate and place: your order submission URL and your webhooks get it as a real one.
        </p>
        <ProblemMessage error={stores.error} />
        {stores.data && stores.data.stores.length === 0 && (
          <p class="empty">No test stores yet: create one to place test orders at it.</p>
        )}
        {stores.data && stores.data.stores.length > 0 && (
          <ul class="list">
            {stores.data.stores.map((store) => (
              <OwnStore key={store.storeId} store={store} onPlaced={upsert} />
            ))}
          </ul>
        )}
      </article>
      <article class="card" aria-labelledby="test-orders">
        <h2 id="test-orders">Test orders placed here</h2>
        {placed.length === 0 ? (
          <p class="empty">None yet: place one at a store above.</p>
        ) : (
          <ul class="list">
            {placed.map((order) => (
              <TestOrder key={order.orderId} order={order} onMoved={upsert} />
            ))}
          </ul>
        )}
      </article>
      <Reset onReset={() => setPlaced([])} />
    </div>
  );
}

function OwnStore(props: {
  store: { storeId: string; name: string; address: { city: string } };
  onPlaced: (order: Order) => void;
}) {
  const { store, onPlaced } = props;
  const { run, pending, feedback } = useAction();
  const place = () =>
    run(async () => {
      const order = await ok(
        api.POST('/v1/test/stores/{storeId}/orders', {
          params: { path: { storeId: store.storeId } },
          body: {},
        }),
      );
      onPlaced(order);
    }, `Placed a test order at ${store.name}.`);
  return (
    <li class="list-row fixture-store">
      <div>
        <strong>{store.name}</strong>
        <span class="subtle">{store.address.city}</span>
        {feedback}
      </div>
      <button
        type="button"
        class="button primary"
        disabled={pending}
        aria-label={`Place a test order at ${store.name}`}
        onClick={() => void place()}
      >
        {pending ? 'Placing…' : 'Place a test order'}
      </button>
    </li>
  );
}

function FixtureStores({ onPlaced }: { onPlaced: () => void }) {
  const stores = useLoad(
    () =>
      Promise.all(
        fixtureStoreIds.map((storeId) =>
          ok(api.GET('/v1/marketfront/stores/{storeId}', { params: { path: { storeId } } })),
        ),
      ),
    '',
  );
  return (
    <article class="card" aria-labelledby="fixture-stores">
      <h2 id="fixture-stores">Fixture stores</h2>
      <ProblemMessage error={stores.error} />
      {stores.data && (
        <ul class="list">
          {stores.data.map((store) => (
            <FixtureStore key={store.storeId} store={store} onPlaced={onPlaced} />
          ))}
        </ul>
      )}
    </article>
  );
}

function FixtureStore({ store, onPlaced }: { store: MarketStore; onPlaced: () => void }) {
  const { run, pending, feedback } = useAction();
  const [placed, setPlaced] = useState<string>();
  const place = () =>
    run(async () => {
      const order = await placeFixtureOrder(store.storeId);
      setPlaced(order.orderId);
      onPlaced();
    }, `Placed a test order at ${store.name}.`);
  return (
    <li class="list-row fixture-store">
      <div>
        <strong>{store.name}</strong>
        <span class="subtle">
          {store.address.city} · {store.timezone} · {store.isOpenNow ? 'open now' : 'closed now'}
          {store.status !== 'online' && ` · ${store.status}`}
        </span>
        <code class="subtle">{store.storeId}</code>
        {placed && (
          <span class="subtle">
            Order <code>{placed}</code>
          </span>
        )}
        {feedback}
      </div>
      <button
        type="button"
        class="button primary"
        disabled={pending}
        aria-label={`Place a test order at ${store.name}`}
        onClick={() => void place()}
      >
        {pending ? 'Placing…' : 'Place a test order'}
      </button>
    </li>
  );
}

/** An order as this page lists it: the orders list's summary, or one the helpers answered. */
const summaryOf = (order: Order): OrderSummary => ({
  orderId: order.orderId,
  storeId: order.storeId,
  state: order.state,
  status: order.status,
  total: order.amounts.total,
  currency: order.amounts.currency,
  placedAt: order.createdAt,
  updatedAt: order.updatedAt,
});

function TestOrder(props: { order: OrderSummary; onMoved: (order: Order) => void }) {
  const { order, onMoved } = props;
  const { run, pending, feedback } = useAction();
  const [to, setTo] = useState<AdvanceTarget>('confirmed');
  const ended = order.state !== 'open';
  const short = order.orderId.slice(0, 8);
  const advance = async () => {
    await run(async () => {
      const moved = await ok(
        api.POST('/v1/test/orders/{orderId}/advance', {
          params: { path: { orderId: order.orderId } },
          body: { to },
        }),
      );
      onMoved(moved);
    }, `Order ${short} advanced to ${to}.`);
  };
  return (
    <li class="list-row test-order">
      <div>
        <code>{order.orderId}</code>
        <span class="subtle">
          <span class={`badge order-${order.status}`} data-testid="order-status">
            {order.status}
          </span>{' '}
          placed {formatInstant(order.placedAt)} · {formatMoney(order.total, order.currency)}
        </span>
        {feedback}
      </div>
      {!ended && (
        <form
          class="inline-form"
          aria-label={`Advance order ${short}`}
          onSubmit={(event) => {
            event.preventDefault();
            void advance();
          }}
        >
          <label>
            Advance order {short} to
            <select
              value={to}
              onChange={(event) => setTo(event.currentTarget.value as AdvanceTarget)}
            >
              {advanceTargets.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" class="button secondary" disabled={pending}>
            Advance
          </button>
        </form>
      )}
    </li>
  );
}

/** One webhook as the stream delivered it: the body a delivery carries, parsed to show. */
interface StreamEvent {
  readonly seq: string;
  readonly webhookId: string;
  readonly type: string;
  readonly createdAt: string;
  readonly summary: string;
}

function streamEventOf(event: LiveEvent): StreamEvent | undefined {
  const { webhookId, createdAt, body } = event.data;
  if (typeof webhookId !== 'string' || typeof createdAt !== 'string') return undefined;
  let summary = '';
  try {
    const data = (JSON.parse(String(body)) as { data?: Record<string, unknown> }).data ?? {};
    const version = typeof data.version === 'number' ? `v${data.version}` : undefined;
    summary = [data.orderId ?? data.storeId, data.status, version]
      .filter((part): part is string => typeof part === 'string')
      .join(' · ');
  } catch {
    // A body this page cannot read is still an event that arrived: shown without a summary.
  }
  return { seq: event.id, webhookId, type: event.type, createdAt, summary };
}

function WebhookStream(props: {
  events: readonly StreamEvent[];
  state: ReturnType<typeof useLiveEvents>;
}) {
  return (
    <article class="card" aria-labelledby="webhook-stream">
      <div class="page-head">
        <h2 id="webhook-stream">Webhook stream</h2>
        <span class={`stream-state stream-${props.state}`} role="status">
          {liveLabel[props.state]}
        </span>
      </div>
      <p class="muted">
        Your test webhooks as the platform sends them, newest first (the latest {STREAM_CAP}), the
        same stream <code>pcp listen</code> forwards to your machine.
      </p>
      {props.events.length === 0 ? (
        <p class="empty">No events yet: place a test order to make some.</p>
      ) : (
        <ol class="stream" aria-label="Webhook events, newest first" tabIndex={0}>
          {props.events.map((event) => (
            <li key={event.seq} class="stream-event">
              <time dateTime={event.createdAt}>{formatInstant(event.createdAt)}</time>
              <code class="stream-type">{event.type}</code>
              <span class="subtle">{event.summary}</span>
            </li>
          ))}
        </ol>
      )}
    </article>
  );
}

function Reset({ onReset }: { onReset?: () => void }) {
  const { run, pending, feedback } = useAction();
  const [confirming, setConfirming] = useState(false);
  const [deleted, setDeleted] = useState<TestResetResult['deleted']>();
  const cancelRef = useRef<HTMLButtonElement>(null);
  const reset = async () => {
    const done = await run(async () => {
      const result = await ok(api.POST('/v1/test/reset'));
      setDeleted(result.deleted);
    }, 'Your test data is deleted.');
    setConfirming(false);
    if (done) onReset?.();
  };
  const counts = deleted ? Object.entries(deleted).filter(([, count]) => count > 0) : [];
  return (
    <article class="card" aria-labelledby="reset">
      <h2 id="reset">Reset test data</h2>
      <p class="muted">
        Deletes everything you made in test mode: stores, catalogs, orders, cards, saved addresses,
        your test webhook endpoint, its deliveries and the stream&apos;s events. Keys, sign-ins and
        the request log stay; so do the fixture stores.
      </p>
      {!confirming && (
        <button
          type="button"
          class="button danger"
          onClick={() => {
            setConfirming(true);
            queueMicrotask(() => cancelRef.current?.focus());
          }}
        >
          Reset test data…
        </button>
      )}
      {confirming && (
        <div class="confirm" role="group" aria-label="Confirm the reset">
          <p>Delete all of your test data? This cannot be undone.</p>
          <button
            type="button"
            class="button danger"
            disabled={pending}
            onClick={() => void reset()}
          >
            Delete my test data
          </button>{' '}
          <button
            ref={cancelRef}
            type="button"
            class="button secondary"
            onClick={() => setConfirming(false)}
          >
            Cancel
          </button>
        </div>
      )}
      {feedback}
      {deleted && (
        <div class="table-wrap">
          <table class="table">
            <caption>Rows deleted, by service and table</caption>
            <thead>
              <tr>
                <th scope="col">Table</th>
                <th scope="col" class="numeric">
                  Rows
                </th>
              </tr>
            </thead>
            <tbody>
              {counts.length === 0 ? (
                <tr>
                  <td colSpan={2}>Nothing to delete: there was no test data.</td>
                </tr>
              ) : (
                counts.map(([table, count]) => (
                  <tr key={table}>
                    <th scope="row">
                      <code>{table}</code>
                    </th>
                    <td class="numeric">{count}</td>
                  </tr>
                ))
              )}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}
