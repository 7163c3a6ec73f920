import type { ApiVersion } from '@pcp/contracts';
import { createOutboundAgents, safeRequest, type AddressAllowlist } from '@pcp/service-kit';
import { LRUCache } from 'lru-cache';
import { createHmac } from 'node:crypto';
import { parseRetryAfter } from './retry-schedule.js';

export interface WebhookSenderOptions {
  allowHttp: boolean;
  allowlist: AddressAllowlist;
  /** The hard limit of one try: connection, request and answer. */
  timeoutMs: number;
  connectTimeoutMs: number;
  /** Tries in flight at most (the dispatcher's concurrency): the connections in use at most. */
  concurrency: number;
  /** A connection older than this is not reused (a partner's DNS change takes effect within it). */
  maxConnectionAgeMs?: number;
}

/** One try's result; `failed` carries why, for the partner's delivery log. */
export type SendOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'gone'; status: 410 }
  | { kind: 'failed'; status: number | null; error: string; retryAfterMs?: number };

export interface WebhookMessage {
  /** The `webhook-id`: the event's, the same on every try. */
  readonly eventId: string;
  /** The body sent and signed: the event rendered in `apiVersion`. */
  readonly payload: string;
  /** The endpoint's API version, sent as `pcp-version`. */
  readonly apiVersion: ApiVersion;
  readonly url: string;
  /** Every secret that signs this try (the current one, and the previous during a rotation). */
  readonly secrets: readonly string[];
}

/** What is read of an endpoint's answer: it is only ever looked at for its status. */
const MAX_RESPONSE_BYTES = 4 * 1024;
/** Below the usual servers' keep-alive timeouts (Node's 5 s), so we close an idle one first. */
const IDLE_CONNECTION_MS = 4_000;
const MAX_CONNECTION_AGE_MS = 60_000;
/** Endpoints whose decoded signing keys are kept. */
const MAX_KEYS = 10_000;

/**
 * POSTs deliveries signed per Standard Webhooks, under the catalog's outbound rules, on
 * keep-alive connections (each made through the guarded lookup). `close()` ends them.
 */
export function createWebhookSender(options: WebhookSenderOptions) {
  const agents = createOutboundAgents({
    allowlist: options.allowlist,
    maxSocketsPerOrigin: options.concurrency,
    maxIdleSockets: options.concurrency,
    maxSocketAgeMs: options.maxConnectionAgeMs ?? MAX_CONNECTION_AGE_MS,
    idleTimeoutMs: IDLE_CONNECTION_MS,
  });
  const keys = new LRUCache<string, Buffer>({ max: MAX_KEYS });
  const keyOf = (secret: string) => {
    let key = keys.get(secret);
    if (!key) {
      key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
      keys.set(secret, key);
    }
    return key;
  };
  /** Standard Webhooks' `v1,` signature (the `standardwebhooks` library's, checked by a test). */
  const sign = (secret: string, signed: string) =>
    `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`;

  async function send(message: WebhookMessage): Promise<SendOutcome> {
    const sentAt = new Date();
    const timestamp = String(Math.floor(sentAt.getTime() / 1000));
    const signed = `${message.eventId}.${timestamp}.${message.payload}`;
    // Standard Webhooks: several signatures, space-separated; a receiver accepts any it can verify.
    const signature = message.secrets.map((secret) => sign(secret, signed)).join(' ');
    const result = await safeRequest(message.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'pcp-webhooks/1',
        'webhook-id': message.eventId,
        'webhook-timestamp': timestamp,
        'webhook-signature': signature,
        'pcp-version': message.apiVersion,
      },
      body: Buffer.from(message.payload),
      allowHttp: options.allowHttp,
      allowlist: options.allowlist,
      agents,
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
  }
  return Object.assign(send, { close: () => agents.close() });
}

export type WebhookSend = (message: WebhookMessage) => Promise<SendOutcome>;
