import { api, ok, type Session } from '../api.js';
import { formatInstant } from '../components/format.js';
import { ProblemMessage } from '../components/problem.js';
import { useLoad } from '../components/use-load.js';
import { href } from '../router.js';

/** Who is signed in, and the state of the partner's integration at a glance. */
export function OverviewPage({ session }: { session: Session }) {
  return (
    <section>
      <h1>Overview</h1>
      <div class="cards">
        <article class="card">
          <h2>Account</h2>
          <dl class="facts">
            <dt>Partner</dt>
            <dd>
              <code>{session.partnerId}</code>
            </dd>
            <dt>Kind</dt>
            <dd>{session.kind === 'commerce' ? 'Commerce (stores)' : 'Distribution (orders)'}</dd>
            <dt>Mode</dt>
            <dd>{session.mode === 'live' ? 'Live' : 'Test (sandbox)'}</dd>
            <dt>Signed in with key</dt>
            <dd>
              <code>{session.keyId}</code>
            </dd>
            <dt>Session ends</dt>
            <dd>{formatInstant(session.expiresAt)}</dd>
          </dl>
        </article>
        {session.kind === 'commerce' ? <StoresSummary /> : <WebhookSummary />}
      </div>
    </section>
  );
}

function StoresSummary() {
  const stores = useLoad(() => ok(api.GET('/v1/commerce/stores', { params: { query: {} } })), '');
  const counts = new Map<string, number>();
  for (const store of stores.data?.stores ?? []) {
    counts.set(store.status, (counts.get(store.status) ?? 0) + 1);
  }
  return (
    <article class="card">
      <h2>Stores</h2>
      <ProblemMessage error={stores.error} />
      {stores.data && (
        <>
          <p class="big-number">{stores.data.totalCount}</p>
          <p class="muted">
            {[...counts].map(([status, count]) => `${count} ${status}`).join(' · ') ||
              'No stores yet'}
          </p>
          <p>
            <a href={href('/stores')}>See your stores</a>
          </p>
        </>
      )}
    </article>
  );
}

function WebhookSummary() {
  const webhook = useLoad(async () => {
    const result = await api.GET('/v1/marketfront/webhooks');
    if (result.response.status === 404) return null;
    return ok(Promise.resolve(result));
  }, '');
  return (
    <article class="card">
      <h2>Webhook endpoint</h2>
      <ProblemMessage error={webhook.error} />
      {webhook.data === null && <p class="muted">No endpoint registered yet.</p>}
      {webhook.data && (
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            <code>{webhook.data.url}</code>
          </dd>
          <dt>Status</dt>
          <dd>
            <span class={`badge status-${webhook.data.status}`}>{webhook.data.status}</span>
            {webhook.data.disabledReason && ` (${webhook.data.disabledReason})`}
          </dd>
          <dt>Events</dt>
          <dd>{webhook.data.events.join(', ')}</dd>
        </dl>
      )}
    </article>
  );
}
