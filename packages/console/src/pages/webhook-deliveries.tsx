import { useState } from 'preact/hooks';
import { api, ok, type WebhookDelivery } from '../api.js';
import { deliveryStatusLabel, formatInstantSeconds } from '../components/format.js';
import { CursorPager, useCursorPages } from '../components/cursor-pages.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { liveLabel, useLiveEvents } from '../components/use-events.js';
import { useLoad } from '../components/use-load.js';
import { href } from '../router.js';

const PAGE = 25;
const ATTEMPT_EVENTS = ['webhook.delivery_attempted'] as const;
type Filter = '' | 'failed' | 'dead';

/**
 * The deliveries made to the endpoint, newest first, all or the failed or dead ones; the first
 * page is read again on each try the live stream reports. A row opens into its tries; a
 * failed or dead delivery can be sent again.
 */
export function WebhookDeliveries() {
  const [filter, setFilter] = useState<Filter>('');
  const pages = useCursorPages();
  const { cursor } = pages;
  const deliveries = useLoad(
    () =>
      ok(
        api.GET('/v1/marketfront/webhooks/deliveries', {
          params: {
            query: {
              limit: PAGE,
              ...(cursor ? { cursor } : {}),
              ...(filter ? { status: filter } : {}),
            },
          },
        }),
      ),
    `${filter}|${cursor ?? ''}`,
  );
  const { firstPage } = pages;
  const live = useLiveEvents(
    firstPage ? '/v1/marketfront/events' : null,
    ATTEMPT_EVENTS,
    deliveries.reload,
    deliveries.reload,
  );
  const [open, setOpen] = useState<string>();
  const { run, pending, feedback } = useAction();

  const resend = async (delivery: WebhookDelivery) => {
    const sent = await run(
      () =>
        ok(
          api.POST('/v1/marketfront/webhooks/deliveries/{deliveryId}/resend', {
            params: { path: { deliveryId: delivery.deliveryId } },
          }),
        ),
      `${delivery.type} v${delivery.version} is being sent again.`,
    );
    if (sent) deliveries.reload();
  };

  const list = deliveries.data;
  return (
    <section class="deliveries" aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Deliveries</h2>
      <div class="toolbar">
        <label class="inline-field">
          Show
          <select
            value={filter}
            onChange={(event) => {
              setFilter(event.currentTarget.value as Filter);
              pages.reset();
            }}
          >
            <option value="">All deliveries</option>
            <option value="failed">Failed (retrying)</option>
            <option value="dead">Dead</option>
          </select>
        </label>
        <p class="live-state" role="status">
          {firstPage ? liveLabel[live] : 'Live updates on the first page only'}
        </p>
      </div>
      {feedback}
      <ProblemMessage error={deliveries.error} />
      {list && list.deliveries.length === 0 && (
        <p class="empty">
          {filter
            ? `No ${filter} deliveries.`
            : 'No deliveries yet: they show here as they are tried.'}
        </p>
      )}
      {list && list.deliveries.length > 0 && (
        <div class="table-wrap">
          <table class="table deliveries-table">
            <caption class="visually-hidden">Webhook deliveries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Order or store</th>
                <th scope="col">Status</th>
                <th scope="col">Tries</th>
                <th scope="col">Last answer</th>
                <th scope="col">Next try</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.deliveries.map((delivery) => (
                <DeliveryRows
                  key={delivery.deliveryId}
                  delivery={delivery}
                  open={open === delivery.deliveryId}
                  onToggle={() =>
                    setOpen(open === delivery.deliveryId ? undefined : delivery.deliveryId)
                  }
                  resending={pending}
                  onResend={() => void resend(delivery)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list && <CursorPager pages={pages} nextCursor={list.nextCursor} />}
    </section>
  );
}

function DeliveryRows(props: {
  delivery: WebhookDelivery;
  open: boolean;
  onToggle: () => void;
  resending: boolean;
  onResend: () => void;
}) {
  const { delivery } = props;
  const triesId = `tries-${delivery.deliveryId}`;
  const canResend = delivery.status === 'failed' || delivery.status === 'dead';
  return (
    <>
      <tr data-delivery={delivery.deliveryId}>
        <th scope="row">
          <code>{delivery.type}</code> <span class="muted">v{delivery.version}</span>
          <span class="subtle">{formatInstantSeconds(delivery.occurredAt)}</span>
        </th>
        <td>
          {delivery.orderId ? (
            <a href={href(`/orders/${delivery.orderId}`)}>
              Order <code>{delivery.orderId.slice(0, 8)}</code>
            </a>
          ) : (
            <span>
              Store <code>{delivery.storeId.slice(0, 8)}</code>
            </span>
          )}
        </td>
        <td>
          <span class={`badge delivery-${delivery.status}`}>
            {deliveryStatusLabel[delivery.status] ?? delivery.status}
          </span>
        </td>
        <td>{delivery.attempts}</td>
        <td>
          {delivery.lastAttemptAt ? (
            <>
              {delivery.lastResponseStatus === null
                ? 'No answer'
                : `HTTP ${delivery.lastResponseStatus}`}
              {delivery.lastLatencyMs !== undefined && (
                <span class="muted"> · {delivery.lastLatencyMs} ms</span>
              )}
              <span class="subtle">{formatInstantSeconds(delivery.lastAttemptAt)}</span>
            </>
          ) : (
            '—'
          )}
        </td>
        <td>
          {delivery.status === 'failed' || delivery.status === 'pending'
            ? formatInstantSeconds(delivery.nextAttemptAt)
            : '—'}
        </td>
        <td class="row-actions">
          <button
            type="button"
            class="button ghost"
            aria-expanded={props.open}
            aria-controls={triesId}
            onClick={props.onToggle}
          >
            {props.open ? 'Hide tries' : 'Tries'}
          </button>
          {canResend && (
            <button
              type="button"
              class="button secondary"
              disabled={props.resending}
              onClick={props.onResend}
            >
              Resend
            </button>
          )}
        </td>
      </tr>
      {props.open && (
        <tr id={triesId} class="tries-row">
          <td colSpan={7}>
            <DeliveryTries delivery={delivery} />
          </td>
        </tr>
      )}
    </>
  );
}

/** One delivery's tries, read again whenever the row shows another try. */
function DeliveryTries({ delivery }: { delivery: WebhookDelivery }) {
  const { deliveryId } = delivery;
  const tries = useLoad(
    () =>
      ok(
        api.GET('/v1/marketfront/webhooks/deliveries/{deliveryId}/attempts', {
          params: { path: { deliveryId } },
        }),
      ),
    `${deliveryId}|${delivery.attempts}|${delivery.lastAttemptAt ?? ''}`,
  );
  const data = tries.data;
  return (
    <div class="tries">
      <ProblemMessage error={tries.error} />
      {data && data.attempts.length === 0 && <p class="muted">Not tried yet.</p>}
      {data && data.attemptsOmitted > 0 && (
        <p class="muted">{data.attemptsOmitted} older tries are not shown.</p>
      )}
      {data && data.attempts.length > 0 && (
        <table class="table tries-table">
          <caption class="visually-hidden">
            Tries of {delivery.type} v{delivery.version}
          </caption>
          <thead>
            <tr>
              <th scope="col">Try</th>
              <th scope="col">At</th>
              <th scope="col">Outcome</th>
              <th scope="col">Response</th>
              <th scope="col">Latency</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {data.attempts.map((attempt) => (
              <tr key={`${attempt.at}|${attempt.attempt}`}>
                <th scope="row">{attempt.attempt}</th>
                <td>{formatInstantSeconds(attempt.at)}</td>
                <td>
                  <span class={`badge delivery-${attempt.outcome}`}>
                    {deliveryStatusLabel[attempt.outcome] ?? attempt.outcome}
                  </span>
                </td>
                <td>
                  {attempt.responseStatus === null ? 'No answer' : `HTTP ${attempt.responseStatus}`}
                </td>
                <td>{attempt.latencyMs} ms</td>
                <td>{attempt.error ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
