import { useEffect, useState } from 'preact/hooks';

/** Where the app lives: every client route is under it (the gateway answers them all). */
export const BASE = '/console';

/** The path under {@link BASE}, without a trailing slash: `/stores/9b1…/hours`. */
function currentRoute(): string {
  const path = location.pathname.startsWith(BASE)
    ? location.pathname.slice(BASE.length)
    : location.pathname;
  return path.replace(/\/+$/, '') || '/';
}

const listeners = new Set<() => void>();

/** Go to a client route (a path under /console) without reloading the page. */
export function navigate(route: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${route}`;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const listener of listeners) listener();
}

/** The current client route, updated on navigate() and the browser's back and forward. */
export function useRoute(): string {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/**
 * A click on a same-origin link to a client route: handled here (no reload) unless the user
 * asked for a new tab or window.
 */
export function onLinkClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = (event.target as Element | null)?.closest('a');
  if (!link || link.target || link.origin !== location.origin) return;
  if (!link.pathname.startsWith(`${BASE}/`) && link.pathname !== BASE) return;
  event.preventDefault();
  navigate(link.pathname.slice(BASE.length) || '/');
}

/** The href of a client route. */
export const href = (route: string): string => `${BASE}${route}`;
