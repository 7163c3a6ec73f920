import { safeRequest, type AddressAllowlist } from '@pcp/service-kit';
import { Webhook } from 'standardwebhooks';
import { parseRetryAfter } from './retry-schedule.js';

export interface WebhookSenderOptions {
  allowHttp: boolean;
  allowlist: AddressAllowlist;
  /** The hard limit of one try: connection, request and answer. */
  timeoutMs: number;
  connectTimeoutMs: number;
}

/** One try's result; `failed` carries why, for the partner's delivery log. */
export type SendOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'gone'; status: 410 }
  | { kind: 'failed'; status: number | null; error: string; retryAfterMs?: number };

export interface WebhookMessage {
  /** The `webhook-id`: the event's, the same on every try. */
  readonly eventId: string;
  readonly payload: string;
  readonly url: string;
  /** Every secret that signs this try (the current one, and the previous during a rotation). */
  readonly secrets: readonly string[];
}

/** What is read of an endpoint's answer: it is only ever looked at for its status. */
const MAX_RESPONSE_BYTES = 4 * 1024;

/** POSTs deliveries signed per Standard Webhooks, under the catalog's outbound rules. */
export function createWebhookSender(options: WebhookSenderOptions) {
  return async function send(message: WebhookMessage): Promise<SendOutcome> {
    const sentAt = new Date();
    // Standard Webhooks: several signatures, space-separated; a receiver accepts any it can verify.
    const signature = message.secrets
      .map((secret) => new Webhook(secret).sign(message.eventId, sentAt, message.payload))
      .join(' ');
    const result = await safeRequest(message.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'pcp-webhooks/1',
        'webhook-id': message.eventId,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: Buffer.from(message.payload),
      allowHttp: options.allowHttp,
      allowlist: options.allowlist,
      maxBytes: MAX_RESPONSE_BYTES,
      urlName: 'webhook URL',
      connectTimeoutMs: options.connectTimeoutMs,
      totalTimeoutMs: options.timeoutMs,
    });
    if (!result.ok) return { kind: 'failed', status: null, error: result.message };
    const { status } = result;
    if (status >= 200 && status <= 299) return { kind: 'delivered', status };
    if (status === 410) return { kind: 'gone', status };
    const retryAfter = result.headers['retry-after'];
    const retryAfterMs = parseRetryAfter(
      typeof retryAfter === 'string' ? retryAfter : undefined,
      sentAt,
    );
    return {
      kind: 'failed',
      status,
      error: `the endpoint answered HTTP ${status}`,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  };
}

export type WebhookSend = ReturnType<typeof createWebhookSender>;
