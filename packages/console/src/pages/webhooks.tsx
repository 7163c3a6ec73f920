import { useState } from 'preact/hooks';
import { ApiProblem, api, ok, type WebhookEndpoint } from '../api.js';
import { formatInstant } from '../components/format.js';
import { fieldText } from '../components/form.js';
import { ProblemMessage } from '../components/problem.js';
import { useAction } from '../components/use-action.js';
import { useLoad } from '../components/use-load.js';
import { WebhookDeliveries } from './webhook-deliveries.js';

type EventKind = WebhookEndpoint['events'][number];

const orderEvents: readonly [EventKind, string][] = [
  ['order.created', 'An order was placed'],
  ['order.status_changed', 'An order moved to another status, or was completed'],
  ['order.cancelled', 'The store or the platform cancelled an order'],
];
const storeEvents: readonly [EventKind, string][] = [
  ['store.status_changed', 'A store went online, paused or busy'],
  ['store.hours_changed', 'A store’s time zone, weekly or special hours changed'],
  ['store.items_availability_changed', 'Items became unavailable or available again'],
  ['catalog.activated', 'A store’s new catalog became active'],
];

/** A signing secret just issued: shown on this page until dismissed, never again. */
interface Revealed {
  readonly secret: string;
  readonly why: 'created' | 'rotated';
  readonly previousSecretExpiresAt: string | null;
}

/**
 * The partner's webhook endpoint (its URL and the events it hears), its signing secret and
 * rotation, and the deliveries made to it.
 */
export function WebhooksPage() {
  const endpoint = useLoad(async () => {
    try {
      return await ok(api.GET('/v1/marketfront/webhooks'));
    } catch (error) {
      // None registered yet: the page offers to register one.
      if (error instanceof ApiProblem && error.problem.errorCode === 'WEBHOOK_NOT_FOUND') {
        return null;
      }
      throw error;
    }
  }, 'endpoint');
  const [revealed, setRevealed] = useState<Revealed>();

  return (
    <section>
      <h1>Webhooks</h1>
      <ProblemMessage error={endpoint.error} />
      {revealed && <SecretReveal revealed={revealed} onDone={() => setRevealed(undefined)} />}
      {endpoint.data !== undefined && (
        <div class="panel-grid webhook-panels">
          <EndpointForm
            endpoint={endpoint.data}
            onSaved={(secret) => {
              if (secret) setRevealed({ secret, why: 'created', previousSecretExpiresAt: null });
              endpoint.reload();
            }}
          />
          {endpoint.data && (
            <SecretRotation
              endpoint={endpoint.data}
              onRotated={(rotated) => {
                setRevealed({ ...rotated, why: 'rotated' });
                endpoint.reload();
              }}
            />
          )}
        </div>
      )}
      <WebhookDeliveries />
    </section>
  );
}

function EndpointForm(props: {
  endpoint: WebhookEndpoint | null;
  onSaved: (secret: string | null) => void;
}) {
  const { endpoint } = props;
  const { run, pending, feedback } = useAction();
  const [formError, setFormError] = useState<string>();

  const save = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const events = data
      .getAll('events')
      .filter((value): value is EventKind => typeof value === 'string');
    if (events.length === 0) {
      setFormError('Choose at least one event.');
      return;
    }
    setFormError(undefined);
    let secret: string | null = null;
    const saved = await run(
      async () => {
        const body = { url: fieldText(form, 'url'), events };
        secret = (await ok(api.PUT('/v1/marketfront/webhooks', { body }))).secret;
      },
      endpoint ? 'The endpoint is saved.' : 'The endpoint is registered.',
    );
    if (saved) props.onSaved(secret);
  };

  const chosen = new Set(endpoint?.events ?? orderEvents.map(([kind]) => kind));
  const eventChoices = (legend: string, kinds: readonly [EventKind, string][]) => (
    <fieldset class="choices">
      <legend>{legend}</legend>
      {kinds.map(([kind, help]) => (
        <label class="checkbox event-choice" key={kind}>
          <input type="checkbox" name="events" value={kind} defaultChecked={chosen.has(kind)} />
          <span>
            <code>{kind}</code>
            <span class="subtle">{help}</span>
          </span>
        </label>
      ))}
    </fieldset>
  );

  return (
    <form
      class="card form"
      aria-labelledby="endpoint-heading"
      onSubmit={(event) => void save(event)}
      // A new endpoint (or a saved one read again) resets the fields to what the server has.
      key={endpoint?.updatedAt ?? 'new'}
    >
      <h2 id="endpoint-heading">Endpoint</h2>
      {endpoint ? (
        <p class="endpoint-status">
          <span class={`badge status-${endpoint.status}`} data-testid="endpoint-status">
            {endpoint.status === 'active' ? 'Active' : 'Disabled'}
          </span>{' '}
          <span class="muted">updated {formatInstant(endpoint.updatedAt)}</span>
        </p>
      ) : (
        <p class="muted">
          No endpoint yet. Register one to receive your orders’ events, signed, at least once and in
          order per order.
        </p>
      )}
      {endpoint?.status === 'disabled' && (
        <p class="notice-warn">
          {endpoint.disabledReason ?? 'The endpoint is disabled.'} Saving it enables it again.
        </p>
      )}
      <label for="webhook-url">URL</label>
      <input
        id="webhook-url"
        name="url"
        type="url"
        required
        maxLength={2048}
        placeholder="https://hooks.example.com/pcp"
        defaultValue={endpoint?.url ?? ''}
        spellcheck={false}
      />
      {eventChoices('Order events', orderEvents)}
      {eventChoices('Store events (every store of this mode)', storeEvents)}
      {formError && (
        <p class="field-error" role="alert">
          {formError}
        </p>
      )}
      <button type="submit" class="button primary" disabled={pending}>
        {endpoint ? 'Save endpoint' : 'Register endpoint'}
      </button>
      {feedback}
    </form>
  );
}

function SecretRotation(props: {
  endpoint: WebhookEndpoint;
  onRotated: (rotated: { secret: string; previousSecretExpiresAt: string | null }) => void;
}) {
  const { run, pending, feedback } = useAction();
  const [confirming, setConfirming] = useState(false);
  const overlapUntil = props.endpoint.previousSecretExpiresAt;

  const rotate = async () => {
    let rotated: { secret: string; previousSecretExpiresAt: string | null } | undefined;
    const done = await run(async () => {
      const answer = await ok(api.POST('/v1/marketfront/webhooks/rotate-secret'));
      if (answer.secret) {
        rotated = {
          secret: answer.secret,
          previousSecretExpiresAt: answer.previousSecretExpiresAt,
        };
      }
    }, 'A new secret signs your deliveries.');
    setConfirming(false);
    if (done && rotated) props.onRotated(rotated);
  };

  return (
    <article class="card form" aria-labelledby="secret-heading">
      <h2 id="secret-heading">Signing secret</h2>
      <p class="muted">
        Each delivery is signed (Standard Webhooks: <code>webhook-signature</code>); verify it with
        your secret. The secret is shown only when it is issued.
      </p>
      {overlapUntil && (
        <p>
          The previous secret also signs deliveries until{' '}
          <strong>{formatInstant(overlapUntil)}</strong>.
        </p>
      )}
      {confirming ? (
        <div class="confirm" role="group" aria-labelledby="rotate-question">
          <p id="rotate-question">
            Issue a new secret? For 24 hours every delivery carries both signatures, the new
            secret’s and the current one’s, so your receiver can switch in that time.
          </p>
          <div class="button-row">
            <button
              type="button"
              class="button danger"
              disabled={pending}
              onClick={() => void rotate()}
            >
              Rotate now
            </button>
            <button type="button" class="button secondary" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <button type="button" class="button secondary" onClick={() => setConfirming(true)}>
          Rotate secret…
        </button>
      )}
      {feedback}
    </article>
  );
}

/** The secret just issued, with a copy button; gone once dismissed or the page is left. */
function SecretReveal({ revealed, onDone }: { revealed: Revealed; onDone: () => void }) {
  const [copied, setCopied] = useState<'yes' | 'failed'>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(revealed.secret);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <article class="card secret-reveal" aria-labelledby="reveal-heading">
      <h2 id="reveal-heading">
        {revealed.why === 'created' ? 'Your signing secret' : 'Your new signing secret'}
      </h2>
      <p>
        It is shown this once: store it with your receiver now.
        {revealed.why === 'rotated' &&
          ` The previous secret keeps working too until ${formatInstant(revealed.previousSecretExpiresAt)} (24 hours): deliveries carry both signatures meanwhile.`}
      </p>
      <div class="secret-row">
        <label for="revealed-secret" class="visually-hidden">
          Signing secret
        </label>
        <input
          id="revealed-secret"
          class="secret"
          readOnly
          value={revealed.secret}
          spellcheck={false}
        />
        <button type="button" class="button primary" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p class="notice" role="status">
        {copied === 'yes' && 'Copied to the clipboard.'}
      </p>
      {copied === 'failed' && (
        <p class="field-error" role="alert">
          The browser refused the clipboard: select the secret and copy it.
        </p>
      )}
      <button type="button" class="button secondary" onClick={onDone}>
        I have stored it
      </button>
    </article>
  );
}
