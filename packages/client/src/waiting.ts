import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The wait a `Retry-After` header asks for, in milliseconds: whole seconds or an HTTP-date
 * (RFC 9110 §10.2.3); undefined when absent or unreadable.
 */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1_000;
  // Every HTTP-date form starts with the day's name; Date.parse alone takes "-1" for a year.
  const at = /^[A-Za-z]{3}/.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Wait `ms`; an abort rejects with the signal's reason, as fetch does. */
export async function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
}
