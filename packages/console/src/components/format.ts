/** An instant as the partner reads it: local date and time, with the zone when asked. */
export function formatInstant(iso: string | null | undefined, timeZone?: string): string {
  if (!iso) return '—';
  return new Intl.DateTimeFormat(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    ...(timeZone ? { timeZone, timeZoneName: 'short' } : {}),
  }).format(new Date(iso));
}

/** An amount in its currency's major unit, as the platform's amounts are: 2.72 USD. */
export function formatMoney(amount: number, currency: string): string {
  return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
}

/** Store status words as shown in badges. */
export const statusLabel: Record<string, string> = {
  online: 'Online',
  paused: 'Paused',
  busy: 'Busy',
};

/** An instant to the second, in the partner's zone: for events seconds apart (ingest runs). */
export function formatInstantSeconds(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Intl.DateTimeFormat(undefined, {
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
  }).format(new Date(iso));
}

/** The time from `from` to `to`: "0.4 s", "12 s", "3 min 5 s", "2 h 10 min"; '—' without both. */
export function formatDuration(from: string | null | undefined, to: string | null | undefined) {
  if (!from || !to) return '—';
  const ms = Math.max(0, new Date(to).getTime() - new Date(from).getTime());
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Order status words as shown in badges. */
export const orderStatusLabel: Record<string, string> = {
  pending: 'Pending',
  confirmed: 'Confirmed',
  preparing: 'Preparing',
  ready: 'Ready',
  inTransit: 'In transit',
  completed: 'Completed',
  cancelled: 'Cancelled',
};

/** Webhook delivery (and try) outcomes as shown in badges. */
export const deliveryStatusLabel: Record<string, string> = {
  pending: 'Pending',
  failed: 'Failed',
  delivered: 'Delivered',
  dead: 'Dead',
};

/** A time of today as the partner reads it, in `timeZone` (the store's): "7:42 PM". */
export function formatTime(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat(undefined, {
    hour: 'numeric',
    minute: '2-digit',
    timeZone,
  }).format(new Date(iso));
}

/** The short name of an order on the board: the end of its id. */
export const orderLabel = (orderId: string) => `#${orderId.slice(-6).toUpperCase()}`;
