import { useState } from 'preact/hooks';
import { signIn, type Session } from '../api.js';
import { ProblemMessage, problemOf } from '../components/problem.js';

const KEY_SHAPE = /^pcp_(live|test)_\S+$/;

/**
 * Paste an API key once: it is exchanged for a session cookie and dropped. The field is a
 * password field (not remembered by the browser's autofill), cleared after each attempt.
 */
export function SignInPage(props: {
  /** Why the partner is here again, if a session just ended. */
  message?: string | undefined;
  onSignedIn: (session: Session) => void;
}) {
  const [error, setError] = useState<ReturnType<typeof problemOf>>();
  const [busy, setBusy] = useState(false);
  const [formatError, setFormatError] = useState<string>();

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = form.elements.namedItem('apiKey') as HTMLInputElement;
    const apiKey = field.value.trim();
    field.value = '';
    if (!KEY_SHAPE.test(apiKey)) {
      setFormatError('An API key starts with pcp_live_ or pcp_test_.');
      field.focus();
      return;
    }
    setFormatError(undefined);
    setError(undefined);
    setBusy(true);
    try {
      props.onSignedIn(await signIn(apiKey));
    } catch (failure) {
      setError(problemOf(failure));
      setBusy(false);
      field.focus();
    }
  };

  return (
    <main class="sign-in" id="main">
      <div class="sign-in-card">
        <img src="/console/favicon.svg" alt="" width={40} height={40} />
        <h1>Sign in to the partner console</h1>
        {props.message && (
          <p class="session-ended" role="status">
            {props.message}
          </p>
        )}
        <p class="muted">
          Paste one of your API keys. It is exchanged for a session on this browser and never kept:
          not in storage, not in the address bar. A <code>pcp_test_</code> key opens test mode.
        </p>
        <form onSubmit={(event) => void submit(event)} noValidate>
          <label for="api-key">API key</label>
          <input
            id="api-key"
            name="apiKey"
            type="password"
            autoComplete="off"
            spellcheck={false}
            placeholder="pcp_live_…"
            required
            aria-invalid={formatError ? 'true' : undefined}
            aria-describedby={formatError ? 'api-key-error' : undefined}
          />
          {formatError && (
            <p id="api-key-error" class="field-error">
              {formatError}
            </p>
          )}
          <button type="submit" class="button primary" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        <ProblemMessage error={error} />
      </div>
    </main>
  );
}
