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

/** Store status words as shown in badges. */
export const statusLabel: Record<string, string> = {
  online: 'Online',
  paused: 'Paused',
  busy: 'Busy',
};

/** An instant to the second, for steps a few seconds apart (webhook tries). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Intl.DateTimeFormat(undefined, {
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
  }).format(new Date(iso));
}

/** An amount in its currency: $23.64. */
export function formatMoney(amount: number, currency: string): string {
  return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
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
