import type { OrderError } from '@pcp/contracts';
import { safeRequest, tryParseJson, type AddressAllowlist } from '@pcp/service-kit';
import { Webhook } from 'standardwebhooks';

/**
 * A store's answer to an order (docs/guide/orders.md#store-order-submission), decided by its HTTP
 * status:
 * - accepted: 2xx, or 409 (the store already has this order: a resubmission's answer);
 * - unavailable (the outcome is unknown; place resubmits with the same webhook-id): 408, 425,
 *   429, 5xx, and no answer at all;
 * - rejected: every other status (400, 403, 404, 410, 422, the rest of 4xx, and 3xx: the
 *   store did not take the request, and a redirect of an order is not followed).
 * An `unavailable` reason is for logs, never shown to partners.
 */
export type StoreSubmission =
  | { outcome: 'accepted' }
  | { outcome: 'rejected'; status: number; errors: OrderError[] }
  | { outcome: 'unavailable'; reason: string };

export interface StoreSubmitterOptions {
  allowHttp: boolean;
  allowlist: AddressAllowlist;
  timeoutMs: number;
  connectTimeoutMs: number;
}

export interface StoreSubmitter {
  /**
   * Never throws for anything the store does: its failures are `unavailable`. Every secret
   * signs (the current one, and the previous during a rotation's overlap).
   */
  submit(
    target: { url: string; secrets: readonly string[] },
    order: { orderId: string; body: unknown },
  ): Promise<StoreSubmission>;
}

/** Statuses below 500 that say nothing of the order: timed out, too early, too many requests. */
const UNKNOWN_OUTCOME = new Set([408, 425, 429]);
/** A rejection's body is read up to this much; a longer one is ignored. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_ERRORS = 20;
const MAX_TEXT_LENGTH = 500;
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
const FALLBACK_CODE = 'STORE_REJECTED';
const FALLBACK_MESSAGE = 'The store did not accept the order';

/** POSTs orders to stores' submission URLs, signed like webhooks. */
export function createStoreSubmitter(options: StoreSubmitterOptions): StoreSubmitter {
  return {
    async submit(target, order) {
      const payload = JSON.stringify(order.body);
      const sentAt = new Date();
      // Standard Webhooks: several signatures, space-separated; a receiver accepts any one.
      const signature = target.secrets
        .map((secret) => new Webhook(secret).sign(order.orderId, sentAt, payload))
        .join(' ');
      const result = await safeRequest(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'user-agent': 'pcp-order-submission/1',
          // The order id, so a retried submission of one order carries one id the store can dedupe.
          'webhook-id': order.orderId,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: Buffer.from(payload),
        allowHttp: options.allowHttp,
        allowlist: options.allowlist,
        maxBytes: MAX_RESPONSE_BYTES,
        urlName: 'order-submission URL',
        connectTimeoutMs: options.connectTimeoutMs,
        totalTimeoutMs: options.timeoutMs,
      });
      if (!result.ok) {
        return { outcome: 'unavailable', reason: `${result.failure}: ${result.message}` };
      }
      const { status } = result;
      if ((status >= 200 && status <= 299) || status === 409) return { outcome: 'accepted' };
      if (UNKNOWN_OUTCOME.has(status) || status >= 500) {
        return { outcome: 'unavailable', reason: `the store answered HTTP ${status}` };
      }
      const answer = result.truncated ? undefined : tryParseJson(result.body);
      return { outcome: 'rejected', status, errors: rejectionErrors(answer) };
    },
  };
}

/** The store's own errors where they are usable, else one generic error; always bounded. */
function rejectionErrors(answer: unknown): OrderError[] {
  const listed = isRecord(answer) && Array.isArray(answer.errors) ? answer.errors : [];
  const errors = listed.filter(isRecord).slice(0, MAX_ERRORS).map(toOrderError);
  if (errors.length > 0) return errors;
  const detail = isRecord(answer) ? (text(answer.detail) ?? text(answer.message)) : undefined;
  return [{ code: FALLBACK_CODE, message: detail ?? FALLBACK_MESSAGE, pointer: null }];
}

function toOrderError(error: Record<string, unknown>): OrderError {
  const { code, pointer } = error;
  return {
    code: typeof code === 'string' && ERROR_CODE.test(code) ? code : FALLBACK_CODE,
    message: text(error.message) ?? FALLBACK_MESSAGE,
    pointer:
      typeof pointer === 'string' && pointer.startsWith('/') && pointer.length <= MAX_TEXT_LENGTH
        ? pointer
        : null,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A non-empty string cut to the length limit, never inside a surrogate pair. */
function text(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (value.length <= MAX_TEXT_LENGTH) return value;
  const cut = value.slice(0, MAX_TEXT_LENGTH);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}
