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

/** An amount in major units of `currency`, as the partner's locale writes money. */
export function formatMoney(amount: number, currency: string): string {
  return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
}

/** A time of today as the partner reads it, in `timeZone` (the store's): "7:42 PM". */
export function formatTime(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat(undefined, {
    hour: 'numeric',
    minute: '2-digit',
    timeZone,
  }).format(new Date(iso));
}
