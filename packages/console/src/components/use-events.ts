import { useEffect, useRef, useState } from 'preact/hooks';

/** One server-sent event of a live stream: its type (`order.status_changed`, …) and data. */
export interface LiveEvent {
  readonly type: string;
  readonly id: string;
  readonly data: Record<string, unknown>;
}

/** Where a live stream is: connecting (first time or again after a drop), or open. */
export type LiveState = 'connecting' | 'open';

/**
 * Follow a live stream of the gateway (`/v1/commerce/stores/{id}/events`,
 * `/v1/marketfront/events`; docs/guide/live-events.md) through the session cookie.
 *
 * The streams carry nothing from before they opened, so `onOpen` runs on every open, the
 * first one too (the page's first read may have raced an event): read what the page shows
 * then, and apply `onEvent` from there (an event about something older is recognized by its
 * `version`). EventSource reconnects by itself after a drop.
 * `path` null follows nothing; a new path closes the old stream.
 */
export function useLiveEvents(
  path: string | null,
  types: readonly string[],
  onEvent: (event: LiveEvent) => void,
  onOpen: () => void,
): LiveState {
  const [state, setState] = useState<LiveState>('connecting');
  // The latest callbacks, so a re-render does not reopen the stream.
  const handlers = useRef({ onEvent, onOpen });
  handlers.current = { onEvent, onOpen };
  const typeKey = types.join(',');

  useEffect(() => {
    if (path === null) return undefined;
    const source = new EventSource(path);
    source.onopen = () => {
      setState('open');
      handlers.current.onOpen();
    };
    source.onerror = () => setState('connecting');
    const listener = (message: MessageEvent<string>) => {
      let data: unknown;
      try {
        data = JSON.parse(message.data);
      } catch {
        return; // not an event of the documented shape: nothing to apply
      }
      if (typeof data !== 'object' || data === null) return;
      handlers.current.onEvent({
        type: message.type,
        id: message.lastEventId,
        data: data as Record<string, unknown>,
      });
    };
    for (const type of typeKey.split(',')) source.addEventListener(type, listener);
    return () => source.close();
  }, [path, typeKey]);

  return path === null ? 'connecting' : state;
}

/** A short label of a live stream's state for the page (polite, not an alert). */
export const liveLabel: Record<LiveState, string> = {
  connecting: 'Connecting to live updates…',
  open: 'Live',
};
