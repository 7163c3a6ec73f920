import {
  subjects,
  webhookDeliveryAttemptsLimit,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from '@pcp/contracts';
import {
  AppError,
  decodeCursor,
  encodeCursor,
  handle,
  requestApiVersion,
  requestMode,
  requirePartner,
  seal,
  type HandlerBinding,
  type Keyring,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import type {
  OrderingDatabase,
  WebhookDeliveryRow,
  WebhookEndpointRow,
} from '../db/ordering.table.js';
import { deliveryAttempts } from './delivery-attempts.repository.js';
import { listDeliveries, resendDelivery } from './delivery-list.repository.js';
import { findEndpoint, rotateSecret, upsertEndpoint } from './endpoint.repository.js';
import { checkRegistrationIn, endpointApiVersion } from './endpoint-version.js';
import { endpointSecretBinding } from './secret-bindings.js';

export interface WebhookHandlerDeps {
  readonly db: Kysely<OrderingDatabase>;
  /** Plain-http endpoints are refused unless the deployment allows them (WEBHOOK_ALLOW_HTTP). */
  readonly allowHttp: boolean;
  /** How long the previous secret keeps signing after a rotation (24 hours). */
  readonly secretOverlapMs: number;
  /** Seals the signing secrets stored (docs/operations.md#secrets-at-rest). */
  readonly keyring: Keyring;
  /** A resent delivery is due now: wake the dispatchers. */
  readonly resent: () => void;
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function toEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  const overlapping =
    row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > Date.now()
      ? row.previous_secret_expires_at.toISOString()
      : null;
  return {
    url: row.url,
    events: row.events as WebhookEndpoint['events'],
    apiVersion: endpointApiVersion(row.api_version),
    status: row.disabled_at ? 'disabled' : 'active',
    disabledReason: row.disabled_reason,
    previousSecretExpiresAt: overlapping,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The endpoint with `secret`: the plaintext just created or rotated, else null. */
function withSecret(row: WebhookEndpointRow, secret: string | null): WebhookEndpointWithSecret {
  return { ...toEndpoint(row), secret };
}

function toDelivery(row: WebhookDeliveryRow): WebhookDelivery {
  // The list and resend never select them; a skipped event was never the partner's.
  if (row.status === 'skipped') throw new Error('a skipped delivery is not shown to partners');
  return {
    deliveryId: row.delivery_id,
    eventId: row.event_id,
    type: row.event_type,
    orderId: row.order_id,
    storeId: row.store_id,
    version: row.version,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at?.toISOString() ?? null,
    lastAttemptAt: row.last_attempt_at?.toISOString() ?? null,
    lastResponseStatus: row.last_response_status,
    ...(row.last_latency_ms === null ? {} : { lastLatencyMs: row.last_latency_ms }),
    lastError: row.last_error,
    occurredAt: row.occurred_at.toISOString(),
    deliveredAt: row.delivered_at?.toISOString() ?? null,
  };
}

// Another partner's delivery answers as an unknown one: ids cannot be probed.
const deliveryNotFound = () =>
  new AppError('WEBHOOK_DELIVERY_NOT_FOUND', 'No webhook delivery with this id');

const webhookNotFound = () =>
  new AppError('WEBHOOK_NOT_FOUND', 'No webhook endpoint is registered; PUT one first');

/** Distribution partners' webhook endpoint and delivery log (docs/guide/webhooks.md). */
export function webhookHandlers(deps: WebhookHandlerDeps): HandlerBinding[] {
  const { db } = deps;
  return [
    handle(subjects.ordering.putWebhook, async (input, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      if (new URL(input.url).protocol !== 'https:' && !deps.allowHttp) {
        const message = 'Webhook endpoints must use https';
        throw new AppError('REQUEST_INVALID', `/url: ${message}`, {
          errors: [{ code: 'INVALID_VALUE', message, pointer: '/url' }],
        });
      }
      // The version the partner built this registration against: the request's, unless named.
      const apiVersion = input.apiVersion ?? requestApiVersion(ctx);
      checkRegistrationIn(apiVersion, input);
      const secret = newWebhookSecret();
      const mode = requestMode(ctx);
      // Sealed for the row this inserts; a replaced endpoint keeps its own secret (and mode).
      const sealed = seal(
        deps.keyring,
        endpointSecretBinding({ partner_id: partnerId, mode }),
        secret,
      );
      const { row, created } = await upsertEndpoint(
        db,
        partnerId,
        { url: input.url, events: input.events, apiVersion, mode },
        sealed,
      );
      return { endpoint: withSecret(row, created ? secret : null), created };
    }),

    handle(subjects.ordering.getWebhook, async (_input, ctx) => {
      const row = await findEndpoint(db, requirePartner(ctx, 'distribution'));
      if (!row) throw webhookNotFound();
      return toEndpoint(row);
    }),

    handle(subjects.ordering.rotateWebhookSecret, async (_input, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const secret = newWebhookSecret();
      const row = await rotateSecret(db, deps.keyring, partnerId, secret, deps.secretOverlapMs);
      if (!row) throw webhookNotFound();
      return withSecret(row, secret);
    }),

    handle(subjects.ordering.listWebhookDeliveries, async (query, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      const page = await listDeliveries(db, partnerId, query, after);
      return {
        deliveries: page.rows.map(toDelivery),
        nextCursor: page.next ? encodeCursor(page.next) : null,
      };
    }),

    handle(subjects.ordering.resendWebhookDelivery, async ({ deliveryId }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const row = await resendDelivery(db, partnerId, deliveryId);
      if (!row) throw deliveryNotFound();
      deps.resent();
      return toDelivery(row);
    }),

    handle(subjects.ordering.listWebhookDeliveryAttempts, async ({ deliveryId }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const found = await deliveryAttempts(db, {
        deliveryId,
        partnerId,
        limit: webhookDeliveryAttemptsLimit,
      });
      if (!found) throw deliveryNotFound();
      return {
        deliveryId,
        attempts: found.rows.map((row) => ({
          attempt: row.attempt,
          outcome: row.outcome,
          responseStatus: row.response_status,
          latencyMs: row.latency_ms,
          error: row.error,
          at: row.tried_at.toISOString(),
        })),
        attemptsOmitted: found.total - found.rows.length,
      };
    }),
  ];
}
