import { z } from 'zod';
import { dateTime, guid, listPageQuery, maxListPage } from './common.js';
import { orderEventKind } from './events.js';
import { exampleIds } from './examples.js';
import { orderState, orderStatus } from './orders.js';
import { MAX_DENIED_ITEMS } from './store-operations.js';

/**
 * A distribution partner's view of its orders (docs/guide/orders.md#listing-your-orders): the
 * list of the orders it placed, and each order's timeline.
 */

/** `GET /v1/marketfront/orders`: the partner's orders newest first, all or of one status. */
export const partnerOrdersQuery = listPageQuery.extend({ status: orderStatus.optional() });
export type PartnerOrdersQuery = z.infer<typeof partnerOrdersQuery>;

/** An order as the partner's list shows it; the whole order is `GET /v1/marketfront/orders/{orderId}`. */
export const orderSummary = z
  .object({
    orderId: guid,
    storeId: guid,
    state: orderState,
    status: orderStatus,
    /** The order's total in major units of `currency`, as `amounts.total`. */
    total: z.number(),
    currency: z.string(),
    placedAt: dateTime,
    updatedAt: dateTime,
  })
  .meta({ id: 'OrderSummary' });
export type OrderSummary = z.infer<typeof orderSummary>;

const orderSummaryExample = {
  orderId: exampleIds.order,
  storeId: exampleIds.store,
  state: 'open',
  status: 'pending',
  total: 25.65,
  currency: 'USD',
  placedAt: '2026-11-22T18:05:00Z',
  updatedAt: '2026-11-22T18:05:00Z',
} as const;

export const orderSummaryList = z
  .object({
    orders: z.array(orderSummary).max(maxListPage),
    /** Absent on the last page; otherwise send it back as `before` for the next page. */
    nextCursor: z.string().optional(),
  })
  .meta({ id: 'OrderSummaryList', examples: [{ orders: [orderSummaryExample] }] });
export type OrderSummaryList = z.infer<typeof orderSummaryList>;

/**
 * A timeline holds at most this many status events (versions 1 and 2, which hold the store's
 * answer, and the most recent others) and this many webhook tries (the most recent): an order
 * has a handful of statuses, but a store may move its estimate and a partner resend a delivery
 * again and again. `eventsOmitted` counts the ones left out.
 */
export const orderTimelineLimits = { statusEvents: 100, webhookAttempts: 200 } as const;

/** The events an order has at most once: placed, three payment steps, the store's answer. */
const onceEvents = 5;

/** The card payment's steps the order went through (a card order only). */
export const orderPaymentAction = z.enum(['authorized', 'captured', 'refunded']);

const at = dateTime;

/** One event of an order's timeline, by `kind`. */
export const orderTimelineEvent = z.discriminatedUnion('kind', [
  /** The order was recorded: its first status is the status event of version 1. */
  z.object({ at, kind: z.literal('placed') }),
  z.object({
    at,
    kind: z.literal('payment'),
    action: orderPaymentAction,
    /** Major units of `currency`. */
    amount: z.number(),
    currency: z.string(),
  }),
  z.object({
    at,
    kind: z.literal('store'),
    /** accepted: confirmed (at placement through its submission URL, or later); denied: cancelled while pending. */
    action: z.enum(['accepted', 'denied']),
    /** A denial's cancelReason. */
    reason: z.string().nullable(),
    /** The items that ran out, as the denial named them (its unavailableItemIds); empty otherwise. */
    unavailableItemIds: z.array(guid).max(MAX_DENIED_ITEMS),
  }),
  z.object({
    at,
    kind: z.literal('status'),
    /** The order's version this change made (as its webhook carries). */
    version: z.number().int().positive(),
    state: orderState,
    status: orderStatus,
    /** Null for version 1 (the status it was placed with), and for the first version kept of an order placed before timelines. */
    previousStatus: orderStatus.nullable(),
    estimatedReadyAt: dateTime.nullable(),
    cancelledBy: z.enum(['store', 'platform']).nullable(),
  }),
  z.object({
    at,
    kind: z.literal('webhook'),
    deliveryId: guid,
    eventType: orderEventKind,
    /** The order version the delivery carries. */
    version: z.number().int().positive(),
    /** The try's number within the delivery (a resend starts again at 1). */
    attempt: z.number().int().positive(),
    /** delivered; failed (another try follows); dead (the schedule ran out, or 410 Gone). */
    outcome: z.enum(['delivered', 'failed', 'dead']),
    /** The endpoint's HTTP status; null when it did not answer. */
    responseStatus: z.number().int().nullable(),
    /** From sending the request to the answer (or the failure). */
    latencyMs: z.number().int().nonnegative(),
    error: z.string().nullable(),
  }),
]);
export type OrderTimelineEvent = z.infer<typeof orderTimelineEvent>;

export const orderTimeline = z
  .object({
    orderId: guid,
    /** Oldest first. */
    events: z
      .array(orderTimelineEvent)
      .max(orderTimelineLimits.statusEvents + orderTimelineLimits.webhookAttempts + onceEvents),
    /** Status events and webhook tries left out (see the limits). */
    eventsOmitted: z.number().int().positive().optional(),
  })
  .meta({
    id: 'OrderTimeline',
    examples: [
      {
        orderId: exampleIds.order,
        events: [
          { at: '2026-11-22T18:05:00Z', kind: 'placed' },
          {
            at: '2026-11-22T18:05:00Z',
            kind: 'payment',
            action: 'authorized',
            amount: 25.65,
            currency: 'USD',
          },
          {
            at: '2026-11-22T18:05:00Z',
            kind: 'payment',
            action: 'captured',
            amount: 25.65,
            currency: 'USD',
          },
          {
            at: '2026-11-22T18:05:00Z',
            kind: 'status',
            version: 1,
            state: 'open',
            status: 'pending',
            previousStatus: null,
            estimatedReadyAt: '2026-11-22T18:45:00Z',
            cancelledBy: null,
          },
          {
            at: '2026-11-22T18:05:01Z',
            kind: 'webhook',
            deliveryId: '7c6d5e4f-3a2b-4c1d-8e0f-9a8b7c6d5e4f',
            eventType: 'order.created',
            version: 1,
            attempt: 1,
            outcome: 'delivered',
            responseStatus: 200,
            latencyMs: 84,
            error: null,
          },
          {
            at: '2026-11-22T18:07:30Z',
            kind: 'store',
            action: 'accepted',
            reason: null,
            unavailableItemIds: [],
          },
          {
            at: '2026-11-22T18:07:30Z',
            kind: 'status',
            version: 2,
            state: 'open',
            status: 'confirmed',
            previousStatus: 'pending',
            estimatedReadyAt: '2026-11-22T18:45:00Z',
            cancelledBy: null,
          },
        ],
      },
    ],
  });
export type OrderTimeline = z.infer<typeof orderTimeline>;
