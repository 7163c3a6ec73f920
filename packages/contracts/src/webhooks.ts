import { z } from 'zod';
import { apiVersion } from './api-version-list.js';
import { dateTime, guid } from './common.js';
import { orderEventKind } from './events.js';
import {
  storeCatalogActivatedData,
  storeEventKind,
  storeHoursChangedData,
  storeItemsAvailabilityChangedData,
  storeStatusChangedData,
} from './store-operations.js';
import { orderState, orderStatus } from './orders.js';
import {
  exampleIds,
  webhookDeliveryAttemptsExample,
  webhookDeliveryExample,
  webhookEndpointExample,
} from './examples.js';

/**
 * Order-status webhooks (docs/guide/webhooks.md): a distribution partner registers one endpoint and
 * the event kinds it wants; every change of its orders is delivered there, signed with
 * Standard Webhooks, at least once and in order per order.
 */

/** Every event kind an endpoint may subscribe to: its orders' and every store's. */
export const webhookEventKind = z.enum([...orderEventKind.options, ...storeEventKind.options]);
export type WebhookEventKind = z.infer<typeof webhookEventKind>;

/**
 * Body of `PUT /v1/marketfront/webhooks`. No `meta` id, like the other request bodies: the
 * OpenAPI generator names the input side of `WebhookEndpoint` `WebhookEndpointInput`, and
 * that id here too makes it refuse to build the document.
 */
export const webhookEndpointInput = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .describe('Where deliveries are POSTed: https (http only where the deployment allows it)'),
    events: z
      .array(webhookEventKind)
      .min(1)
      .max(webhookEventKind.options.length)
      .refine((kinds) => new Set(kinds).size === kinds.length, 'Each event kind once')
      .describe('The event kinds to deliver'),
    apiVersion: apiVersion
      .optional()
      .describe(
        'The API version deliveries are rendered in (docs/guide/versioning.md); absent: the ' +
          "version of this request (its PCP-Version, else your partner's pin)",
      ),
  })
  .meta({
    examples: [
      { url: webhookEndpointExample.url, events: ['order.created', 'order.status_changed'] },
    ],
  });
export type WebhookEndpointInput = z.infer<typeof webhookEndpointInput>;

/** The partner's endpoint as `GET` shows it: never the secret. */
export const webhookEndpoint = z
  .object({
    url: z.string(),
    events: z.array(webhookEventKind),
    /**
     * The API version its deliveries are rendered in, and their `pcp-version` header. Always
     * sent; optional, so the release's clients are not broken by it.
     */
    apiVersion: apiVersion.optional(),
    /** `disabled` after the endpoint answered 410 Gone; a `PUT` enables it again. */
    status: z.enum(['active', 'disabled']),
    disabledReason: z.string().nullable(),
    /** Until then deliveries also carry a signature made with the previous secret. */
    previousSecretExpiresAt: dateTime.nullable(),
    createdAt: dateTime,
    updatedAt: dateTime,
  })
  .meta({ id: 'WebhookEndpoint', examples: [webhookEndpointExample] });
export type WebhookEndpoint = z.infer<typeof webhookEndpoint>;

/**
 * The endpoint with its signing secret: the answer of the `PUT` that created it and of a
 * rotation, the only times the secret is shown.
 */
export const webhookEndpointWithSecret = webhookEndpoint
  .extend({
    secret: z
      .string()
      .nullable()
      .describe(
        'The whsec_ signing secret: shown when the endpoint is created and when it is ' +
          'rotated, null otherwise. Verify deliveries with any Standard Webhooks library.',
      ),
  })
  .meta({
    id: 'WebhookEndpointWithSecret',
    examples: [{ ...webhookEndpointExample, secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD' }],
  });
export type WebhookEndpointWithSecret = z.infer<typeof webhookEndpointWithSecret>;

/** The body of an order event's delivery (docs/guide/webhooks.md), as the partner receives it. */
export const webhookPayload = z
  .object({
    type: orderEventKind,
    timestamp: dateTime,
    data: z.object({
      orderId: guid,
      storeId: guid,
      state: orderState,
      status: orderStatus,
      previousStatus: orderStatus.nullable(),
      /** The order's version this change made: a receiver keeps the highest it has seen. */
      version: z.number().int().positive(),
      /** The estimate after this change: placement sets it, the store may move it. */
      estimatedReadyAt: dateTime.nullable(),
      /** Set on `order.cancelled`. */
      cancelReason: z.string().nullable(),
      cancelledBy: z.enum(['store', 'platform']).nullable(),
    }),
  })
  .meta({
    id: 'WebhookPayload',
    examples: [
      {
        type: 'order.status_changed',
        timestamp: '2026-11-22T18:10:55Z',
        data: {
          orderId: exampleIds.order,
          storeId: exampleIds.store,
          state: 'open',
          status: 'confirmed',
          previousStatus: 'pending',
          version: 2,
          estimatedReadyAt: '2026-11-22T18:45:00Z',
          cancelReason: null,
          cancelledBy: null,
        },
      },
    ],
  });
export type WebhookPayload = z.infer<typeof webhookPayload>;

/**
 * The body of a store event's delivery (docs/guide/webhooks.md#store-events): `data` is the
 * event's, with the store's event `version` (in order per store; keep the highest seen).
 */
export const storeWebhookPayload = z
  .object({
    type: storeEventKind,
    timestamp: dateTime,
    data: z.union(
      [
        storeStatusChangedData,
        storeHoursChangedData,
        storeItemsAvailabilityChangedData,
        storeCatalogActivatedData,
      ].map((data) => data.extend({ version: z.number().int().positive() })),
    ),
  })
  .meta({
    id: 'StoreWebhookPayload',
    examples: [
      {
        type: 'store.status_changed',
        timestamp: '2026-11-22T18:05:00Z',
        data: {
          storeId: exampleIds.store,
          version: 7,
          status: 'busy',
          reason: null,
          pausedAt: '2026-11-22T18:05:00Z',
          resumeAt: '2026-11-22T20:00:00Z',
          extraPrepMinutes: 20,
          pausedBy: null,
        },
      },
    ],
  });
export type StoreWebhookPayload = z.infer<typeof storeWebhookPayload>;

/**
 * A delivery's state: `pending` (not tried yet, or its endpoint is unavailable for now),
 * `failed` (the last try failed; another is scheduled), `delivered`, `dead` (the retry
 * schedule ran out, or the endpoint answered 410; resend brings it back).
 */
export const webhookDeliveryStatus = z.enum(['pending', 'failed', 'delivered', 'dead']);
export type WebhookDeliveryStatus = z.infer<typeof webhookDeliveryStatus>;

export const webhookDelivery = z
  .object({
    deliveryId: guid,
    /** The `webhook-id` header: the same on every try and every resend of this event. */
    eventId: guid,
    type: webhookEventKind,
    /** The order of an order event; null for a store event. */
    orderId: guid.nullable(),
    /** The store the event is about (an order event's: the order's store). */
    storeId: guid,
    /** The order's version (order events) or the store's event version (store events). */
    version: z.number().int().positive(),
    status: webhookDeliveryStatus,
    attempts: z.number().int().nonnegative(),
    nextAttemptAt: dateTime.nullable(),
    lastAttemptAt: dateTime.nullable(),
    /** The endpoint's HTTP status on the last try; null when it did not answer. */
    lastResponseStatus: z.number().int().nullable(),
    /**
     * From the last try's request to its answer (or its timeout); absent before any try (and
     * optional, so the release's clients are not broken by it).
     */
    lastLatencyMs: z.number().int().nonnegative().optional(),
    lastError: z.string().nullable(),
    occurredAt: dateTime,
    deliveredAt: dateTime.nullable(),
  })
  .meta({ id: 'WebhookDelivery', examples: [webhookDeliveryExample] });
export type WebhookDelivery = z.infer<typeof webhookDelivery>;

/** `GET /v1/marketfront/webhooks/deliveries`: newest first, by an opaque keyset cursor. */
export const webhookDeliveriesQuery = z.object({
  status: z.enum(['failed', 'dead']).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
});
export type WebhookDeliveriesQuery = z.infer<typeof webhookDeliveriesQuery>;

export const webhookDeliveryList = z
  .object({ deliveries: z.array(webhookDelivery).max(100), nextCursor: z.string().nullable() })
  .meta({
    id: 'WebhookDeliveryList',
    examples: [{ deliveries: [webhookDeliveryExample], nextCursor: null }],
  });
export type WebhookDeliveryList = z.infer<typeof webhookDeliveryList>;

/** The most recent tries of one delivery that `GET …/deliveries/{id}/attempts` lists. */
export const webhookDeliveryAttemptsLimit = 100;

/** One try of a delivery: how the endpoint answered, and when. */
export const webhookDeliveryAttempt = z.object({
  /** The delivery's try count after this try (a resend counts from 1 again). */
  attempt: z.number().int().positive(),
  /** `failed`: another try followed or is scheduled; `dead`: this was the last. */
  outcome: z.enum(['delivered', 'failed', 'dead']),
  /** The endpoint's HTTP status; null when it did not answer. */
  responseStatus: z.number().int().nullable(),
  latencyMs: z.number().int().nonnegative(),
  error: z.string().nullable(),
  at: dateTime,
});
export type WebhookDeliveryAttempt = z.infer<typeof webhookDeliveryAttempt>;

export const webhookDeliveryAttempts = z
  .object({
    deliveryId: guid,
    /** Oldest first: the most recent 100. */
    attempts: z.array(webhookDeliveryAttempt).max(webhookDeliveryAttemptsLimit),
    /** Older tries left out (0 when every try is listed). */
    attemptsOmitted: z.number().int().nonnegative(),
  })
  .meta({ id: 'WebhookDeliveryAttempts', examples: [webhookDeliveryAttemptsExample] });
export type WebhookDeliveryAttempts = z.infer<typeof webhookDeliveryAttempts>;

/**
 * The test-mode webhook stream (docs/guide/sandbox.md#webhook-stream): every webhook event of a
 * test tenant that has opened a stream is kept in its stream log, read in order of `seq`.
 */
export const webhookStreamOpened = z.object({
  /** The whsec_ secret the stream's listeners sign their forwarded deliveries with. */
  secret: z.string(),
});
export type WebhookStreamOpened = z.infer<typeof webhookStreamOpened>;

/** The most events one read of a stream log returns. */
export const MAX_WEBHOOK_STREAM_READ = 100;

export const webhookStreamReadInput = z.object({
  /** Events strictly after this sequence number; absent: from the oldest kept. */
  after: z.number().int().nonnegative().optional(),
  limit: z.number().int().min(1).max(MAX_WEBHOOK_STREAM_READ),
});
export type WebhookStreamReadInput = z.infer<typeof webhookStreamReadInput>;

/** One event of a stream log, as a delivery would carry it. */
export const webhookStreamEvent = z.object({
  /** Increases along the tenant's log (not contiguous: the numbers are shared by all logs). */
  seq: z.number().int().positive(),
  /** The `webhook-id` a delivery of it carries. */
  webhookId: z.string(),
  type: webhookEventKind,
  /** The exact body a delivery carries (JSON text): what its signature is made over. */
  body: z.string(),
  /**
   * The API version `body` is written in (the tenant's endpoint's, else the request's): a
   * delivery's `pcp-version`. Absent from an ordering of before versions: the newest.
   */
  apiVersion: apiVersion.optional(),
  createdAt: dateTime,
});
export type WebhookStreamEvent = z.infer<typeof webhookStreamEvent>;

export const webhookStreamPage = z.object({
  events: z.array(webhookStreamEvent).max(MAX_WEBHOOK_STREAM_READ),
});
export type WebhookStreamPage = z.infer<typeof webhookStreamPage>;
