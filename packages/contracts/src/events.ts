import { z } from 'zod';
import { dateTime, guid } from './common.js';
import { orderState, orderStatus } from './orders.js';
import { partnerMode } from './sandbox.js';
import { storeEventData } from './store-operations.js';

/**
 * Every event travels in this envelope (docs/conventions.md#messaging). `version` is the version of
 * the aggregate the event is about (1 for its first event, one more for each change; the schema's
 * own version is in `type`), and `id` is derived from the aggregate and that version: the same on
 * every publish, it is the JetStream `Nats-Msg-Id` (publish dedupe) and the consumer's idempotency
 * key. A consumer applies an event only over an older version.
 */
export function eventEnvelope<Data extends z.ZodType>(type: string, data: Data) {
  return z.object({
    id: guid,
    type: z.literal(type),
    occurredAt: dateTime,
    version: z.number().int().positive(),
    data,
  });
}

export const catalogActivatedData = z.object({
  storeId: guid,
  catalogSetId: guid,
  versionId: guid,
  etag: z.string(),
  activatedAt: dateTime,
});
export type CatalogActivatedData = z.infer<typeof catalogActivatedData>;

/** What happened to an order: placed, moved along its status machine, or cancelled. */
export const orderEventKind = z.enum(['order.created', 'order.status_changed', 'order.cancelled']);
export type OrderEventKind = z.infer<typeof orderEventKind>;

export const orderStatusChangedData = z.object({
  event: orderEventKind,
  orderId: guid,
  storeId: guid,
  /** The distribution partner that placed the order (whose webhooks it goes to). */
  partnerId: guid,
  /**
   * Internal: the store's owner, or null once the store was deleted under the order (a sandbox
   * reset): such an order's events reach no store's live stream, whoever owns its store id
   * now. Events published before it lack it.
   */
  storePartnerId: guid.nullable().optional(),
  state: orderState,
  status: orderStatus,
  /** Null for `order.created`. */
  previousStatus: orderStatus.nullable(),
  /** The order's estimate after this change (events before store operations lack it). */
  estimatedReadyAt: dateTime.nullable().optional(),
  cancelReason: z.string().nullable().optional(),
  cancelledBy: z.enum(['store', 'platform']).nullable().optional(),
});
export type OrderStatusChangedData = z.infer<typeof orderStatusChangedData>;

/**
 * A store event as published: what it says, and the mode of its store
 * (docs/guide/sandbox.md#modes), which only webhook endpoints of that mode receive. Events
 * published before modes carry none: they are live.
 */
export const storeChangedData = z.intersection(
  storeEventData,
  z.object({ mode: partnerMode.default('live') }),
);
export type StoreChangedData = z.infer<typeof storeChangedData>;

/** Events, by the subject (below the deployment prefix) they are published on. */
export const events = {
  catalogActivated: {
    subject: 'events.catalog.v1.activated',
    schema: eventEnvelope('catalog.v1.activated', catalogActivatedData),
  },
  /**
   * Every change of an order, with the order's version: the webhooks' source
   * (docs/guide/webhooks.md).
   */
  orderStatusChanged: {
    subject: 'events.ordering.v1.order-status-changed',
    schema: eventEnvelope('ordering.v1.order-status-changed', orderStatusChangedData),
  },
  /**
   * Every store event (docs/guide/webhooks.md#store-events), with the store's event version:
   * the store-event webhooks' source, and the item availability caches' cue.
   */
  storeChanged: {
    subject: 'events.stores.v1.store-changed',
    schema: eventEnvelope('stores.v1.store-changed', storeChangedData),
  },
  /**
   * Internal: a store's order profile (`stores.v1.order-profile`) changed in a way no store event
   * announces (an upserted profile), with the store's profile version. Ordering's profile caches
   * drop the store on it, as on every store event. Partners never receive it.
   */
  storeProfileChanged: {
    subject: 'events.stores.v1.profile-changed',
    schema: eventEnvelope(
      'stores.v1.profile-changed',
      z.object({ storeId: guid, mode: partnerMode }),
    ),
  },
} as const;
