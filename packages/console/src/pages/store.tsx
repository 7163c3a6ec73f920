import { api, ok, type Store, type StoreStatus } from '../api.js';
import { formatInstant, statusLabel } from '../components/format.js';
import { fieldText } from '../components/form.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { nextLocalMidnight } from '../components/time.js';
import { useLoad } from '../components/use-load.js';
import { href } from '../router.js';
import { StoreCatalog } from './store-catalog.js';
import { StoreHours } from './store-hours.js';
import { StoreItems } from './store-items.js';
import { StoreOrders } from './store-orders.js';

export type StoreTab = 'status' | 'hours' | 'items' | 'orders' | 'catalog';

const tabs: readonly { tab: StoreTab; label: string; path: string }[] = [
  { tab: 'status', label: 'Status', path: '' },
  { tab: 'hours', label: 'Hours', path: '/hours' },
  { tab: 'items', label: 'Item availability', path: '/items' },
  { tab: 'orders', label: 'Orders', path: '/orders' },
  { tab: 'catalog', label: 'Catalog', path: '/catalog' },
];

/**
 * One store: its status (pause, busy, resume), its hours, its items' availability, its
 * orders and its catalog (with `ingestId`, one ingest run of it).
 */
export function StorePage({
  storeId,
  tab,
  ingestId,
}: {
  storeId: string;
  tab: StoreTab;
  ingestId?: string;
}) {
  const store = useLoad(
    () => ok(api.GET('/v1/commerce/stores/{storeId}', { params: { path: { storeId } } })),
    storeId,
  );
  return (
    <section>
      <p class="breadcrumb">
        <a href={href('/stores')}>Stores</a> <span aria-hidden="true">›</span>
      </p>
      <h1>{store.data?.name ?? 'Store'}</h1>
      <ProblemMessage error={store.error} />
      {store.data && (
        <>
          <p class="subtle">
            {store.data.address.address1}, {store.data.address.city} · {store.data.timezone} ·{' '}
            <code>{store.data.storeId}</code>
          </p>
          <nav class="tabs" aria-label="Store">
            {tabs.map((item) => (
              <a
                key={item.tab}
                href={href(`/stores/${storeId}${item.path}`)}
                aria-current={item.tab === tab ? 'page' : undefined}
              >
                {item.label}
              </a>
            ))}
          </nav>
          {tab === 'status' && <StoreStatusPanel store={store.data} onChange={store.reload} />}
          {tab === 'hours' && <StoreHours store={store.data} onChange={store.reload} />}
          {tab === 'items' && <StoreItems store={store.data} />}
          {tab === 'orders' && <StoreOrders store={store.data} />}
          {tab === 'catalog' && (
            <StoreCatalog store={store.data} ingestId={ingestId} onChange={store.reload} />
          )}
        </>
      )}
    </section>
  );
}

const pauseReasons = [
  ['operational_issues', 'Operational issues'],
  ['staff_shortage', 'Staff shortage'],
  ['too_busy', 'Too busy'],
  ['maintenance', 'Maintenance'],
  ['other', 'Other'],
] as const;
type PauseReason = (typeof pauseReasons)[number][0];

/** How long a pause or busy spell lasts: minutes, the rest of the store's day, or until changed. */
const durations = [
  ['', 'Until I change it'],
  ['30', '30 minutes'],
  ['60', '1 hour'],
  ['120', '2 hours'],
  ['tonight', 'Until tonight (store time)'],
] as const;

function resumeAt(duration: string, timeZone: string): string | undefined {
  if (duration === '') return undefined;
  if (duration === 'tonight') return nextLocalMidnight(timeZone).toISOString();
  return new Date(Date.now() + Number(duration) * 60_000).toISOString();
}

type StatusChange =
  | { status: 'online' }
  | { status: 'paused'; reason: PauseReason; resumeAt?: string }
  | { status: 'busy'; extraPrepMinutes: number; resumeAt?: string };

function StoreStatusPanel({ store, onChange }: { store: Store; onChange: () => void }) {
  const storeId = store.storeId;
  const status = useLoad(
    () => ok(api.GET('/v1/commerce/stores/{storeId}/status', { params: { path: { storeId } } })),
    storeId,
  );
  const { run, pending: busy, feedback } = useAction();

  const change = async (body: StatusChange, done: string) => {
    const changed = await run(
      () =>
        ok(
          api.POST('/v1/commerce/stores/{storeId}/status', { params: { path: { storeId } }, body }),
        ),
      done,
    );
    if (!changed) return;
    status.reload();
    onChange();
  };

  const current = status.data;
  return (
    <div class="panel-grid">
      <article class="card">
        <h2>Now</h2>
        <ProblemMessage error={status.error} />
        {current && <CurrentStatus status={current} timeZone={store.timezone} />}
        {current && current.status !== 'online' && (
          <button
            type="button"
            class="button primary"
            disabled={busy}
            onClick={() => void change({ status: 'online' }, 'The store is online again.')}
          >
            Resume: go online
          </button>
        )}
        {feedback}
      </article>
      <PauseForm
        disabled={busy}
        onSubmit={(reason, duration) =>
          void change(
            { status: 'paused', reason, ...optionalResume(duration, store.timezone) },
            'The store is paused: it takes no orders.',
          )
        }
      />
      <BusyForm
        disabled={busy}
        onSubmit={(minutes, duration) =>
          void change(
            {
              status: 'busy',
              extraPrepMinutes: minutes,
              ...optionalResume(duration, store.timezone),
            },
            `The store is busy: every ETA grows by ${minutes} minutes.`,
          )
        }
      />
    </div>
  );
}

function optionalResume(duration: string, timeZone: string) {
  const at = resumeAt(duration, timeZone);
  return at ? { resumeAt: at } : {};
}

function CurrentStatus({ status, timeZone }: { status: StoreStatus; timeZone: string }) {
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <span class={`badge status-${status.status}`} data-testid="store-status">
          {statusLabel[status.status] ?? status.status}
        </span>
      </dd>
      {status.status === 'paused' && (
        <>
          <dt>Reason</dt>
          <dd>
            {pauseReasons.find(([value]) => value === status.reason)?.[1] ?? status.reason ?? '—'}
          </dd>
          <dt>Paused by</dt>
          <dd>{status.pausedBy === 'platform' ? 'The platform (orders not accepted)' : 'You'}</dd>
          <dt>Since</dt>
          <dd>{formatInstant(status.pausedAt, timeZone)}</dd>
        </>
      )}
      {status.status === 'busy' && (
        <>
          <dt>Extra preparation</dt>
          <dd>{status.extraPrepMinutes} minutes</dd>
        </>
      )}
      {status.status !== 'online' && (
        <>
          <dt>Resumes</dt>
          <dd>
            {status.resumeAt ? formatInstant(status.resumeAt, timeZone) : 'When you resume it'}
          </dd>
        </>
      )}
    </dl>
  );
}

function DurationField({ id }: { id: string }) {
  return (
    <>
      <label for={id}>For</label>
      <select id={id} name="duration">
        {durations.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    </>
  );
}

function PauseForm(props: {
  disabled: boolean;
  onSubmit: (reason: PauseReason, duration: string) => void;
}) {
  return (
    <form
      class="card form"
      aria-labelledby="pause-heading"
      onSubmit={(event) => {
        event.preventDefault();
        const form = event.currentTarget;
        props.onSubmit(fieldText(form, 'reason') as PauseReason, fieldText(form, 'duration'));
      }}
    >
      <h2 id="pause-heading">Pause</h2>
      <p class="muted">A paused store takes no orders and drops out of discovery.</p>
      <label for="pause-reason">Reason</label>
      <select id="pause-reason" name="reason">
        {pauseReasons.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <DurationField id="pause-duration" />
      <button type="submit" class="button danger" disabled={props.disabled}>
        Pause the store
      </button>
    </form>
  );
}

function BusyForm(props: {
  disabled: boolean;
  onSubmit: (minutes: number, duration: string) => void;
}) {
  return (
    <form
      class="card form"
      aria-labelledby="busy-heading"
      onSubmit={(event) => {
        event.preventDefault();
        const form = event.currentTarget;
        props.onSubmit(Number(fieldText(form, 'minutes')), fieldText(form, 'duration'));
      }}
    >
      <h2 id="busy-heading">Busy</h2>
      <p class="muted">Keep taking orders, with more time to prepare each.</p>
      <label for="busy-minutes">Extra minutes per order</label>
      <input
        id="busy-minutes"
        name="minutes"
        type="number"
        min={5}
        max={120}
        step={5}
        defaultValue="15"
        required
      />
      <DurationField id="busy-duration" />
      <button type="submit" class="button secondary" disabled={props.disabled}>
        Mark as busy
      </button>
    </form>
  );
}
