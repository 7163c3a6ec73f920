/**
 * When a webhook delivery is tried again (docs/guide/webhooks.md#retry-schedule): the retry
 * schedule with jitter, and the endpoint's Retry-After where it asks for longer.
 */

/** Delays before each try: the first at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const CONTRACT_RETRY_SCHEDULE_MS: readonly number[] = [
  0,
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];

/** Jitter: a delay is drawn from ±this fraction around its step, so retries do not march together. */
const JITTER = 0.2;

/** A Retry-After longer than this is not honoured beyond it (a day). */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** A comma-separated list of delays in ms (WEBHOOK_RETRY_SCHEDULE_MS); the first is usually 0. */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(',').map((step) => step.trim());
  const steps = parts.map(Number);
  if (
    parts.length > 50 ||
    parts.some((part) => !/^\d{1,10}$/.test(part)) ||
    steps.some((step) => step > 7 * 24 * 3_600_000)
  ) {
    throw new Error('a retry schedule is 1..50 comma-separated delays in ms, each 0..7 days');
  }
  return steps;
}

/**
 * The delay before the next try after `attemptsMade` failed ones, or undefined when the
 * schedule is spent (the delivery is dead). `retryAfterMs` (the endpoint's Retry-After)
 * lengthens it, never shortens it.
 */
export function nextRetryDelay(
  schedule: readonly number[],
  attemptsMade: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | undefined {
  const step = schedule[attemptsMade];
  if (step === undefined) return undefined;
  const jittered = Math.round(step * (1 - JITTER + 2 * JITTER * random()));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/** An IMF-fixdate, the HTTP-date senders must use (RFC 9110 §5.6.7). */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** Retry-After as delta-seconds or an HTTP-date (RFC 9110 §10.2.3), in ms from `now`. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!HTTP_DATE.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
