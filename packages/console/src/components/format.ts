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
