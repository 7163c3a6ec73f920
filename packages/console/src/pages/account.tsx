import { useRef, useState } from 'preact/hooks';
import {
  api,
  ok,
  type ApiKeyList,
  type ApiVersionPin,
  type RateLimitUsage,
  type Session,
} from '../api.js';
import { formatInstant } from '../components/format.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { useLoad } from '../components/use-load.js';

function readKeys(session: Session) {
  return session.kind === 'commerce'
    ? ok(api.GET('/v1/commerce/keys'))
    : ok(api.GET('/v1/marketfront/keys'));
}

function readPin(session: Session) {
  return session.kind === 'commerce'
    ? ok(api.GET('/v1/commerce/api-version'))
    : ok(api.GET('/v1/marketfront/api-version'));
}

function movePin(session: Session, version: ApiVersionPin['apiVersion']) {
  const body = { version };
  return session.kind === 'commerce'
    ? ok(api.POST('/v1/commerce/api-version', { body }))
    : ok(api.POST('/v1/marketfront/api-version', { body }));
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
 * The partner's API keys of the session's mode (never a secret), how much of each
 * rate-limit budget the current minute has used, and its API version pin with the newer
 * versions (docs/guide/requests.md).
 */
export function AccountPage({ session }: { session: Session }) {
  const keys = useLoad(() => readKeys(session), session.kind);
  const limits = useLoad(() => readLimits(session), session.kind);
  const pin = useLoad(() => readPin(session), session.kind);
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
            pin.reload();
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
      <article class="card" aria-labelledby="api-version">
        <h2 id="api-version">API version</h2>
        <p class="muted">
          The dated version of the API your requests use unless they name another with{' '}
          <code>PCP-Version</code>. It is your partner&apos;s: your live and test keys share it.
        </p>
        <ProblemMessage error={pin.error} />
        {pin.data && <PinUpgrade session={session} pin={pin.data} onMoved={pin.reload} />}
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

/** The pin, the versions after it, and an upgrade to one of them after a confirm step. */
function PinUpgrade(props: { session: Session; pin: ApiVersionPin; onMoved: () => void }) {
  const { pin } = props;
  const newer = pin.newerVersions;
  const [target, setTarget] = useState(newer.at(-1));
  const [confirming, setConfirming] = useState(false);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const { run, pending, feedback } = useAction();
  // The choice stays valid when the pin moves (here or elsewhere) and the list shrinks.
  const chosen = target !== undefined && newer.includes(target) ? target : newer.at(-1);

  const upgrade = async (version: ApiVersionPin['apiVersion']) => {
    const done = await run(
      () => movePin(props.session, version),
      `Your partner is pinned to ${version}.`,
    );
    setConfirming(false);
    if (done) props.onMoved();
  };

  return (
    <>
      <p>
        Pinned to <strong>{pin.apiVersion}</strong>
        {newer.length === 0 ? ', the newest version.' : '.'}
      </p>
      {newer.length > 0 && (
        <>
          <p>Newer versions: {newer.join(', ')}. Upgrading to the newest changes:</p>
          <ul class="version-changes">
            {pin.changes.map((change) => (
              <li key={change.name}>
                <strong>{change.version}</strong> <code>{change.name}</code>: {change.description}
              </li>
            ))}
          </ul>
          {props.session.mode === 'test' ? (
            <p class="muted">
              Sign in with a live key to upgrade: the pin is also what your live integration runs.
            </p>
          ) : confirming && chosen ? (
            <div class="confirm" role="group" aria-labelledby="upgrade-question">
              <p id="upgrade-question">
                Move your pin from {pin.apiVersion} to {chosen}? Your live and test requests use{' '}
                {chosen} from their next one, and you cannot move back yourself.
              </p>
              <div class="button-row">
                <button
                  type="button"
                  class="button danger"
                  disabled={pending}
                  onClick={() => void upgrade(chosen)}
                >
                  Upgrade to {chosen}
                </button>
                <button
                  ref={cancelRef}
                  type="button"
                  class="button secondary"
                  onClick={() => setConfirming(false)}
                >
                  Cancel
                </button>
              </div>
            </div>
          ) : (
            <div class="button-row">
              {newer.length > 1 && (
                <label>
                  Upgrade to{' '}
                  <select
                    value={chosen}
                    onChange={(event) =>
                      setTarget(event.currentTarget.value as ApiVersionPin['apiVersion'])
                    }
                  >
                    {newer.map((version) => (
                      <option key={version} value={version}>
                        {version}
                      </option>
                    ))}
                  </select>
                </label>
              )}
              <button
                type="button"
                class="button secondary"
                onClick={() => {
                  setConfirming(true);
                  queueMicrotask(() => cancelRef.current?.focus());
                }}
              >
                Upgrade to {chosen}…
              </button>
            </div>
          )}
        </>
      )}
      {feedback}
    </>
  );
}
