import { useEffect, useState } from 'preact/hooks';
import { currentSession, onSessionEnded, signOut, type Session } from './api.js';
import { ProblemMessage, problemOf } from './components/problem.js';
import { ThemeToggle } from './components/theme.js';
import { AccountPage } from './pages/account.js';
import { OrderPage } from './pages/order.js';
import { OrdersPage } from './pages/orders.js';
import { OverviewPage } from './pages/overview.js';
import { RequestsPage } from './pages/requests.js';
import { SandboxPage } from './pages/sandbox.js';
import { SignInPage } from './pages/sign-in.js';
import { StorePage, type StoreTab } from './pages/store.js';
import { StoresPage } from './pages/stores.js';
import { WebhooksPage } from './pages/webhooks.js';
import { href, navigate, onLinkClick, useRoute } from './router.js';

interface NavItem {
  readonly route: string;
  readonly label: string;
  /** Shown to test-mode sessions only (the sandbox's helpers answer live keys 403). */
  readonly testOnly?: boolean;
}

/** Every partner's: its request log, keys and rate limits, and in test mode its sandbox. */
const accountNavigation: readonly NavItem[] = [
  { route: '/requests', label: 'Requests' },
  { route: '/account', label: 'Account' },
  { route: '/sandbox', label: 'Sandbox', testOnly: true },
];

const navigation: Record<Session['kind'], readonly NavItem[]> = {
  commerce: [
    { route: '/overview', label: 'Overview' },
    { route: '/stores', label: 'Stores' },
    ...accountNavigation,
  ],
  distribution: [
    { route: '/overview', label: 'Overview' },
    { route: '/orders', label: 'Orders' },
    { route: '/webhooks', label: 'Webhooks' },
    ...accountNavigation,
  ],
};

/** The navigation a session sees: its kind's, without the test-only pages in live mode. */
const navigationOf = (session: Session) =>
  navigation[session.kind].filter((item) => !item.testOnly || session.mode === 'test');

/** The page of a route for a signed-in partner, and the nav entry it belongs to. */
function pageOf(route: string, session: Session) {
  if (route === '/overview') return { nav: '/overview', page: <OverviewPage session={session} /> };
  if (route === '/requests') return { nav: route, page: <RequestsPage session={session} /> };
  if (route === '/account') return { nav: route, page: <AccountPage session={session} /> };
  if (route === '/sandbox' && session.mode === 'test') {
    return { nav: route, page: <SandboxPage session={session} /> };
  }
  if (session.kind === 'commerce') {
    if (route === '/stores') return { nav: '/stores', page: <StoresPage /> };
    const store = /^\/stores\/([^/]+)(?:\/(hours|items|orders)|\/(catalog)(?:\/([^/]+))?)?$/.exec(
      route,
    );
    if (store) {
      const tab = (store[2] ?? store[3] ?? 'status') as StoreTab;
      const page = <StorePage storeId={store[1]!} tab={tab} ingestId={store[4]} />;
      return { nav: '/stores', page };
    }
  }
  if (session.kind === 'distribution') {
    if (route === '/orders') return { nav: '/orders', page: <OrdersPage /> };
    const order = /^\/orders\/([^/]+)$/.exec(route);
    if (order) return { nav: '/orders', page: <OrderPage orderId={order[1]!} /> };
    if (route === '/webhooks') return { nav: '/webhooks', page: <WebhooksPage /> };
  }
  return undefined;
}

/**
 * The console: the sign-in page without a session; otherwise the header (partner kind and
 * mode), the navigation of the partner's kind and the page of the route.
 */
export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<ReturnType<typeof problemOf>>();
  /** Whether the last session ended under the page (expired, ended elsewhere, key revoked). */
  const [ended, setEnded] = useState(false);

  useEffect(() => {
    onSessionEnded(() => {
      setSession(null);
      setEnded(true);
    });
    currentSession().then(
      (found) => setSession(found ?? null),
      (failure: unknown) => {
        setError(problemOf(failure));
        setSession(null);
      },
    );
  }, []);

  useEffect(() => {
    if (session === null && route !== '/sign-in') navigate('/sign-in', { replace: true });
    if (session && (route === '/' || route === '/sign-in')) {
      navigate(session.kind === 'commerce' ? '/stores' : '/overview', { replace: true });
    }
  }, [session, route]);

  useEffect(() => {
    const found = session && pageOf(route, session);
    const label = found ? navigationOf(session).find((item) => item.route === found.nav) : null;
    document.title = session
      ? `${label?.label ?? 'Not found'} · Partner console`
      : 'Sign in · Partner console';
  }, [session, route]);

  if (session === undefined) {
    return (
      <main class="loading" aria-busy="true">
        <p>Loading…</p>
      </main>
    );
  }
  if (session === null) {
    return (
      <div class="signed-out" onClick={onLinkClick}>
        <div class="signed-out-theme">
          <ThemeToggle />
        </div>
        <ProblemMessage error={error} />
        <SignInPage
          message={ended ? 'Your session has ended. Sign in again to go on.' : undefined}
          onSignedIn={(signedIn) => {
            setError(undefined);
            setEnded(false);
            setSession(signedIn);
          }}
        />
      </div>
    );
  }

  const found = pageOf(route, session);
  const signOutNow = async () => {
    try {
      await signOut();
    } catch (failure) {
      setError(problemOf(failure));
    }
    setSession(null);
  };
  return (
    <div class="shell" onClick={onLinkClick}>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href={href('/overview')}>
          <img src="/console/favicon.svg" alt="" width={24} height={24} />
          <span>Partner console</span>
        </a>
        <div class="topbar-partner">
          <span class="kind">{session.kind === 'commerce' ? 'Commerce' : 'Distribution'}</span>
          <span
            class={`mode-badge mode-${session.mode}`}
            title={session.mode === 'live' ? 'Live mode: real stores and money' : 'Test mode'}
          >
            {session.mode === 'live' ? 'LIVE' : 'TEST'}
          </span>
        </div>
        <div class="topbar-actions">
          <ThemeToggle />
          <button type="button" class="button secondary" onClick={() => void signOutNow()}>
            Sign out
          </button>
        </div>
      </header>
      <nav class="sidebar" aria-label="Console">
        <ul>
          {navigationOf(session).map((item) => (
            <li key={item.route}>
              <a
                href={href(item.route)}
                aria-current={found?.nav === item.route ? 'page' : undefined}
              >
                {item.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        <ProblemMessage error={error} />
        {found ? (
          found.page
        ) : (
          <section>
            <h1>Page not found</h1>
            <p>
              Nothing lives at this address. <a href={href('/overview')}>Go to the overview</a>.
            </p>
          </section>
        )}
      </main>
    </div>
  );
}
