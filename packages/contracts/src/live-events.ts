import { z } from 'zod';
import { dateTime, guid } from './common.js';
import type { events } from './events.js';
import {
  webhookDeliveryStatus,
  type StoreWebhookPayload,
  type WebhookPayload,
} from './webhooks.js';

/** An order event as published on the events stream. */
export type OrderStatusChangedEvent = z.output<typeof events.orderStatusChanged.schema>;
/** A store event as published on the events stream. */
export type StoreChangedEvent = z.output<typeof events.storeChanged.schema>;

/**
 * What partners are told of an order event: the body of its webhook delivery
 * (docs/guide/webhooks.md); its `type` and `data` are also the live events' (docs/guide/live-events.md).
 */
export function orderEventPayload(event: OrderStatusChangedEvent): WebhookPayload {
  const { data } = event;
  return {
    type: data.event,
    timestamp: event.occurredAt,
    data: {
      orderId: data.orderId,
      storeId: data.storeId,
      state: data.state,
      status: data.status,
      previousStatus: data.previousStatus,
      version: event.version,
      estimatedReadyAt: data.estimatedReadyAt ?? null,
      cancelReason: data.cancelReason ?? null,
      cancelledBy: data.cancelledBy ?? null,
    },
  };
}

/**
 * What partners are told of a store event: the body of its webhook delivery
 * (docs/guide/webhooks.md#store-events), without the store's mode (an endpoint, like a
 * stream, has one).
 */
export function storeEventPayload(event: StoreChangedEvent): StoreWebhookPayload {
  const { event: kind, mode: _mode, ...data } = event.data;
  return { type: kind, timestamp: event.occurredAt, data: { ...data, version: event.version } };
}

/**
 * A core NATS message (no reply, not kept) ordering publishes once the outcome of a try of one
 * of a tenant's webhook deliveries is committed, so the gateway's open live streams
 * (docs/guide/live-events.md) can say so at once. A cue to read the delivery again, not a
 * record: one lost (no gateway subscribed) costs nothing but that cue.
 */
export const webhookAttemptNotice = z.object({
  deliveryId: guid,
  /** The order of an order event's delivery; null for a store event's. */
  orderId: guid.nullable(),
  storeId: guid,
  /** The delivery's status after this try. */
  status: webhookDeliveryStatus,
  /** Tries made so far, this one included. */
  attempts: z.number().int().positive(),
  /** The endpoint's HTTP status; null when it did not answer. */
  responseStatus: z.number().int().nullable(),
  attemptedAt: dateTime,
});
export type WebhookAttemptNotice = z.infer<typeof webhookAttemptNotice>;

/** The subjects of the webhook attempt notices, below the deployment prefix. */
export const webhookAttemptNotices = {
  /** One tenant's notices. */
  subject: (tenantId: string) => `ordering.v1.webhooks.attempted.${tenantId}`,
  /** Every tenant's (the gateway's one subscription, and the permissions). */
  wildcard: 'ordering.v1.webhooks.attempted.*',
} as const;

/** The live event type of a webhook attempt notice (docs/guide/live-events.md). */
export const WEBHOOK_ATTEMPT_EVENT = 'webhook.delivery_attempted';

/** Store ids one store deletion notice names at most (a larger deletion sends several). */
export const MAX_STORES_PER_DELETION_NOTICE = 500;

/**
 * Internal (no partner receives it): stores the stores service deleted (today only by a
 * sandbox reset), a core NATS publish every gateway replica hears (no queue group), so each
 * ends the live streams of those stores at once. At most once: a lost notice is covered by
 * the streams' periodic re-check (docs/guide/live-events.md#limits).
 */
export const storeDeletionNotice = z.object({
  storeIds: z.array(guid).min(1).max(MAX_STORES_PER_DELETION_NOTICE),
});
export type StoreDeletionNotice = z.infer<typeof storeDeletionNotice>;

/** The subject of store deletion notices, below the deployment prefix. */
export const storeDeletionNotices = { subject: 'stores.v1.notices.stores-deleted' } as const;
