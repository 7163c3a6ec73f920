import { api, ok, type ApiKeyList, type RateLimitUsage, type Session } from '../api.js';
import { formatInstant } from '../components/format.js';
import { ProblemMessage } from '../components/problem.js';
import { useLoad } from '../components/use-load.js';

function readKeys(session: Session) {
  return session.kind === 'commerce'
    ? ok(api.GET('/v1/commerce/keys'))
    : ok(api.GET('/v1/marketfront/keys'));
}

function readLimits(session: Session) {
  return session.kind === 'commerce'
    ? ok(api.GET('/v1/commerce/rate-limits'))
    : ok(api.GET('/v1/marketfront/rate-limits'));
}

const bucketLabel: Record<RateLimitUsage['limits'][number]['bucket'], string> = {
  reads: 'Reads',
  writes: 'Writes',
  discovery: 'Discovery',
};

/**
 * The partner's API keys of the session's mode (never a secret) and how much of each
 * rate-limit budget the current minute has used (docs/guide/requests.md).
 */
export function AccountPage({ session }: { session: Session }) {
  const keys = useLoad(() => readKeys(session), session.kind);
  const limits = useLoad(() => readLimits(session), session.kind);
  return (
    <section>
      <div class="page-head">
        <h1>Account</h1>
        <button
          type="button"
          class="button secondary"
          disabled={limits.loading}
          onClick={() => {
            keys.reload();
            limits.reload();
          }}
        >
          Refresh
        </button>
      </div>
      <article class="card" aria-labelledby="rate-limits">
        <h2 id="rate-limits">Rate limits</h2>
        <p class="muted">
          Requests counted in the current one-minute window of each budget, refused ones included;{' '}
          {session.mode === 'live' ? 'live' : 'test'} mode has a budget of its own.
        </p>
        <ProblemMessage error={limits.error} />
        {limits.data && <RateLimits usage={limits.data} />}
      </article>
      <article class="card" aria-labelledby="api-keys">
        <h2 id="api-keys">API keys</h2>
        <p class="muted">
          Your {session.mode} keys, newest first. The operator creates and revokes keys; a
          key&apos;s secret is shown only once, when it is made.
        </p>
        <ProblemMessage error={keys.error} />
        {keys.data && <KeyTable keys={keys.data} current={session.keyId} />}
      </article>
    </section>
  );
}

function RateLimits({ usage }: { usage: RateLimitUsage }) {
  return (
    <ul class="meters">
      {usage.limits.map((limit) => {
        const id = `limit-${limit.bucket}`;
        return (
          <li key={limit.bucket} class="meter-row">
            <span id={id} class="meter-label">
              {bucketLabel[limit.bucket]}
            </span>
            <meter
              aria-labelledby={id}
              min={0}
              max={limit.limitPerMinute}
              value={limit.used}
              low={limit.limitPerMinute * 0.5}
              high={limit.limitPerMinute * 0.8}
              optimum={0}
            />
            <span class="meter-text">
              {limit.used} of {limit.limitPerMinute} used · {limit.remaining} left · resets{' '}
              {new Date(limit.resetsAt).toLocaleTimeString()}
            </span>
          </li>
        );
      })}
    </ul>
  );
}

function KeyTable({ keys, current }: { keys: ApiKeyList; current: string }) {
  if (keys.keys.length === 0) return <p class="empty">No keys of this mode.</p>;
  return (
    <div class="table-wrap">
      <table class="table">
        <caption class="visually-hidden">Your API keys</caption>
        <thead>
          <tr>
            <th scope="col">Key id</th>
            <th scope="col">Mode</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {keys.keys.map((key) => (
            <tr key={key.keyId}>
              <th scope="row">
                <code>{key.keyId}</code>
                {key.keyId === current && <span class="subtle">This session&apos;s key</span>}
              </th>
              <td>
                <span class={`mode-badge mode-${key.mode}`}>{key.mode.toUpperCase()}</span>
              </td>
              <td>{formatInstant(key.createdAt)}</td>
              <td>{key.lastUsedAt ? formatInstant(key.lastUsedAt) : 'Never'}</td>
              <td>
                {key.revokedAt ? (
                  <span class="badge status-disabled">Revoked {formatInstant(key.revokedAt)}</span>
                ) : (
                  <span class="badge status-active">Active</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
