import { api, ok, type Order, type OrderTimeline } from '../api.js';
import {
  deliveryStatusLabel,
  formatInstant,
  formatMoney,
  formatInstantSeconds,
  orderStatusLabel,
} from '../components/format.js';
import { ProblemMessage } from '../components/problem.js';
import { liveLabel, useLiveEvents, type LiveEvent } from '../components/use-events.js';
import { useLoad } from '../components/use-load.js';
import { href } from '../router.js';

type Step = OrderTimeline['events'][number];

/** The events of the live stream that change what this page shows. */
const ORDER_EVENTS = [
  'order.created',
  'order.status_changed',
  'order.cancelled',
  'webhook.delivery_attempted',
] as const;

/**
 * One order the partner placed: where it stands, and its timeline (placed, payment, the
 * store's answer, every status version, every webhook try), read again on each live event of
 * this order.
 */
export function OrderPage({ orderId }: { orderId: string }) {
  const order = useLoad(
    () => ok(api.GET('/v1/marketfront/orders/{orderId}', { params: { path: { orderId } } })),
    orderId,
  );
  const timeline = useLoad(
    () =>
      ok(api.GET('/v1/marketfront/orders/{orderId}/timeline', { params: { path: { orderId } } })),
    orderId,
  );
  const reload = () => {
    order.reload();
    timeline.reload();
  };
  const live = useLiveEvents(
    '/v1/marketfront/events',
    ORDER_EVENTS,
    (event: LiveEvent) => {
      if (event.data.orderId === orderId) reload();
    },
    reload,
  );

  return (
    <section>
      <p class="breadcrumb">
        <a href={href('/orders')}>Orders</a> <span aria-hidden="true">›</span>
      </p>
      <h1>
        Order <code>{orderId.slice(0, 8)}</code>
      </h1>
      <p class="live-state" role="status">
        {liveLabel[live]}
      </p>
      <ProblemMessage error={order.error} />
      {order.data && <OrderFacts order={order.data} />}
      <h2 id="timeline-heading">Timeline</h2>
      <ProblemMessage error={timeline.error} />
      {timeline.data && <Timeline timeline={timeline.data} />}
    </section>
  );
}

function OrderFacts({ order }: { order: Order }) {
  return (
    <div class="card order-facts">
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <span class={`badge order-${order.status}`} data-testid="order-status">
            {orderStatusLabel[order.status] ?? order.status}
          </span>{' '}
          <span class="muted">version {order.version}</span>
        </dd>
        <dt>Total</dt>
        <dd>
          {formatMoney(order.amounts.total, order.amounts.currency)}{' '}
          <span class="muted">
            {order.paymentType === 'CARD' && order.payment
              ? `${order.payment.brand} ·· ${order.payment.last4}`
              : 'Pay at store'}
          </span>
        </dd>
        <dt>Fulfillment</dt>
        <dd>{order.fulfillment.mode === 'PICKUP' ? 'Pickup' : 'Delivery by the store'}</dd>
        <dt>Placed</dt>
        <dd>{formatInstant(order.createdAt)}</dd>
        {order.acceptBy && (
          <>
            <dt>Store answers by</dt>
            <dd>{formatInstantSeconds(order.acceptBy)}</dd>
          </>
        )}
        <dt>Ready at (estimate)</dt>
        <dd>{formatInstant(order.estimatedReadyAt)}</dd>
        {order.cancelReason && (
          <>
            <dt>Cancelled</dt>
            <dd>
              {order.cancelledBy === 'platform' ? 'By the platform' : 'By the store'}:{' '}
              {order.cancelReason}
            </dd>
          </>
        )}
        <dt>Store</dt>
        <dd>
          <code>{order.storeId}</code>
        </dd>
        <dt>Order id</dt>
        <dd>
          <code>{order.orderId}</code>
        </dd>
      </dl>
    </div>
  );
}

function Timeline({ timeline }: { timeline: OrderTimeline }) {
  return (
    <>
      {timeline.eventsOmitted !== undefined && timeline.eventsOmitted > 0 && (
        <p class="notice-warn">
          {timeline.eventsOmitted} older {timeline.eventsOmitted === 1 ? 'step is' : 'steps are'}{' '}
          not shown: the timeline keeps the first two versions, the 100 latest status changes and
          the 200 latest webhook tries.
        </p>
      )}
      <ol class="timeline" aria-labelledby="timeline-heading">
        {timeline.events.map((step, index) => (
          <li key={index} class={`timeline-step step-${step.kind}`}>
            <time class="timeline-at" dateTime={step.at}>
              {formatInstantSeconds(step.at)}
            </time>
            <StepText step={step} />
          </li>
        ))}
      </ol>
    </>
  );
}

function StepText({ step }: { step: Step }) {
  switch (step.kind) {
    case 'placed':
      return <span class="timeline-what">Placed</span>;
    case 'payment':
      return (
        <span class="timeline-what">
          Payment {step.action} <span class="muted">{formatMoney(step.amount, step.currency)}</span>
        </span>
      );
    case 'store':
      return (
        <span class="timeline-what">
          {step.action === 'accepted' ? 'The store accepted it' : 'The store denied it'}
          {step.reason && <span class="muted"> · {step.reason}</span>}
        </span>
      );
    case 'status':
      return (
        <span class="timeline-what">
          <span class={`badge order-${step.status}`}>
            {orderStatusLabel[step.status] ?? step.status}
          </span>{' '}
          <span class="muted">
            version {step.version}
            {step.previousStatus && ` · from ${orderStatusLabel[step.previousStatus]}`}
            {step.estimatedReadyAt && ` · ready at ${formatInstant(step.estimatedReadyAt)}`}
            {step.cancelledBy && ` · cancelled by the ${step.cancelledBy}`}
          </span>
        </span>
      );
    case 'webhook':
      return (
        <span class="timeline-what">
          Webhook <code>{step.eventType}</code> v{step.version}, try {step.attempt}:{' '}
          <span class={`badge delivery-${step.outcome}`}>
            {deliveryStatusLabel[step.outcome] ?? step.outcome}
          </span>{' '}
          <span class="muted">
            {step.responseStatus === null ? 'no answer' : `HTTP ${step.responseStatus}`} ·{' '}
            {step.latencyMs} ms
          </span>
          {step.error && <span class="timeline-error">{step.error}</span>}
        </span>
      );
  }
}
