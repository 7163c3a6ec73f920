import { z } from 'zod';
import {
  dropEnumValues,
  dropNullAlternative,
  dropProperty,
  eachOperationSchema,
  mapMediaExamples,
  mediaOf,
  operationsOf,
  type OpenApiObject,
} from './api-document.js';
import type { ApiVersionChange, JsonValue } from './api-version-change.js';
import { orderEventKind } from './events.js';
import { storeEventKind } from './store-operations.js';
import { setStoreStatusInput } from './stores.js';
import { webhookEndpointInput } from './webhooks.js';

/**
 * The changes of `2026-12-01` against `2026-11-01`: store operations (contract §12) and the
 * sandbox (§13). Each reads alone; docs/guide/changelog.md lists them, and
 * docs/guide/versioning.md#2026-11-01 says why each translation reads as it does.
 */

type JsonObject = Record<string, unknown>;
const isObject = (value: JsonValue): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `body` without `fields` (the same value when it is not an object). */
function without(body: JsonValue, ...fields: string[]): JsonValue {
  if (!isObject(body)) return body;
  const copy = { ...body };
  for (const field of fields) delete copy[field];
  return copy;
}

/** Each item of the list `body[field]` through `item`. */
const eachOf =
  (field: string, item: (value: JsonValue) => JsonValue) =>
  (body: JsonValue): JsonValue =>
    isObject(body) && Array.isArray(body[field])
      ? { ...body, [field]: (body[field] as JsonValue[]).map(item) }
      : body;

/** The list `body[field]` without the items `drop` names. */
const dropFrom =
  (field: string, drop: (value: JsonValue) => boolean) =>
  (body: JsonValue): JsonValue =>
    isObject(body) && Array.isArray(body[field])
      ? { ...body, [field]: (body[field] as JsonValue[]).filter((item) => !drop(item)) }
      : body;

/** A store profile (or discovery result): busy reads as online, with no extra minutes. */
function storeDown(store: JsonValue): JsonValue {
  if (!isObject(store)) return store;
  const older = without(store, 'extraPrepMinutes') as JsonObject;
  return store.status === 'busy' ? { ...older, status: 'online' } : older;
}

/** The status endpoints' object: a busy spell reads as plain online (no pause, no end). */
function storeStatusDown(status: JsonValue): JsonValue {
  if (!isObject(status)) return status;
  const older = without(status, 'extraPrepMinutes') as JsonObject;
  return status.status === 'busy'
    ? { ...older, status: 'online', reason: null, pausedAt: null, resumeAt: null }
    : older;
}

/** The status a store could be set to before busy: online, or paused with a reason. */
const setStoreStatusInputBeforeBusy = z.discriminatedUnion(
  'status',
  setStoreStatusInput.options.filter((option) => option.shape.status.value !== 'busy') as [
    (typeof setStoreStatusInput.options)[0],
    (typeof setStoreStatusInput.options)[1],
  ],
);

const storeBusyAnswers = {
  upsertStore: storeDown,
  getStore: storeDown,
  rotateOrderSubmissionSecret: storeDown,
  lookUpStore: storeDown,
  listStores: eachOf('stores', storeDown),
  discoverStores: eachOf('stores', storeDown),
  getStoreStatus: storeStatusDown,
  setStoreStatus: storeStatusDown,
};

/** The alternative of a status body whose status is only busy. */
const isBusyAlternative = (alternative: unknown) =>
  isObject(alternative) &&
  isObject(alternative.properties) &&
  isObject(alternative.properties.status) &&
  JSON.stringify(alternative.properties.status.enum) === '["busy"]';

export const storeBusyStatus: ApiVersionChange = {
  name: 'store-busy-status',
  description:
    'A store may be busy (it takes orders, each ETA longer by extraPrepMinutes); before, a busy store reads as online without extraPrepMinutes and busy cannot be set.',
  responseDown: storeBusyAnswers,
  requestUp: { setStoreStatus: { schema: setStoreStatusInputBeforeBusy } },
  documentDown: (document) => {
    eachOperationSchema(document, Object.keys(storeBusyAnswers), 'response', (schema) => {
      dropProperty(schema, 'extraPrepMinutes');
      if (isObject(schema.properties)) dropEnumValues(schema.properties.status, ['busy']);
    });
    eachOperationSchema(document, ['setStoreStatus'], 'request', (schema) => {
      if (Array.isArray(schema.oneOf))
        schema.oneOf = schema.oneOf.filter((alternative) => !isBusyAlternative(alternative));
    });
  },
};

const orderDown = (order: JsonValue) => without(order, 'acceptBy');
const orderAnswers = {
  getOrder: orderDown,
  placeOrder: orderDown,
  changeOrderStatus: orderDown,
  listStoreOrders: eachOf('orders', orderDown),
};

export const orderAcceptBy: ApiVersionChange = {
  name: 'order-accept-by',
  description:
    'Orders carry acceptBy, when a pending order is cancelled if its store has not accepted it; before, orders have no acceptBy.',
  responseDown: orderAnswers,
  documentDown: (document) =>
    eachOperationSchema(document, Object.keys(orderAnswers), 'response', (schema) =>
      dropProperty(schema, 'acceptBy'),
    ),
};

export const itemAvailability: ApiVersionChange = {
  name: 'item-availability',
  description:
    'Item availability overrides (the item-availability operations) and denying an order with unavailableItemIds; before, neither exists and unavailableItemIds is ignored.',
  addedOperations: ['setItemAvailability', 'getItemAvailability', 'lookUpItemAvailability'],
  requestUp: {
    // The older body took unknown fields and ignored them: so does its translation.
    changeOrderStatus: { up: (body) => without(body, 'unavailableItemIds') },
  },
  responseDown: {
    getOrderTimeline: eachOf('events', (event) => without(event, 'unavailableItemIds')),
  },
  documentDown: (document) => {
    const withoutIds = (schema: OpenApiObject) => dropProperty(schema, 'unavailableItemIds');
    eachOperationSchema(document, ['changeOrderStatus'], 'request', withoutIds);
    eachOperationSchema(document, ['getOrderTimeline'], 'response', withoutIds);
    for (const { operation } of operationsOf(document)) {
      if (operation.operationId !== 'changeOrderStatus') continue;
      for (const media of mediaOf(operation, 'request')) {
        mapMediaExamples(media, (body) => without(body, 'unavailableItemIds'));
      }
    }
  },
};

export const specialHours: ApiVersionChange = {
  name: 'special-hours',
  description:
    'Special hours replace a store’s weekly hours on given dates (the special-hours operations); before, only weekly hours exist.',
  addedOperations: ['getSpecialHours', 'setSpecialHours'],
};

const isStoreEventKind = (kind: JsonValue) =>
  typeof kind === 'string' && (storeEventKind.options as readonly string[]).includes(kind);

/** An endpoint as the older version shows it: its order event kinds only. */
const endpointDown = (endpoint: JsonValue) =>
  isObject(endpoint) && Array.isArray(endpoint.events)
    ? { ...endpoint, events: endpoint.events.filter((kind) => !isStoreEventKind(kind)) }
    : endpoint;

/** The webhook body the older version accepted: order event kinds only. */
const webhookEndpointInputBeforeStoreEvents = webhookEndpointInput.extend({
  events: z
    .array(orderEventKind)
    .min(1)
    .max(orderEventKind.options.length)
    .refine((kinds) => new Set(kinds).size === kinds.length, 'Each event kind once'),
});

const storeEventAnswers = {
  putWebhook: endpointDown,
  getWebhook: endpointDown,
  rotateWebhookSecret: endpointDown,
  listWebhookDeliveries: dropFrom(
    'deliveries',
    (delivery) => isObject(delivery) && isStoreEventKind(delivery.type),
  ),
};

/**
 * The event kinds of an endpoint or a delivery without the store events, and a delivery's
 * orderId never null (only a store event's is).
 */
function withoutStoreEvents(schema: OpenApiObject): void {
  if (!isObject(schema.properties)) return;
  const { events, type, orderId } = schema.properties;
  if (isObject(events) && isObject(events.items)) {
    dropEnumValues(events.items, storeEventKind.options);
    // Each kind at most once: as many as there are.
    const kinds = events.items.enum;
    if (Array.isArray(kinds) && typeof events.maxItems === 'number') {
      events.maxItems = Math.min(events.maxItems, kinds.length);
    }
  }
  dropEnumValues(type, storeEventKind.options);
  if (isObject(type) && Array.isArray(type.enum) && type.enum.length > 0)
    dropNullAlternative(orderId);
}

export const storeEvents: ApiVersionChange = {
  name: 'store-events',
  description:
    'Webhook endpoints may subscribe to store events (store.status_changed, store.hours_changed, store.items_availability_changed, catalog.activated); before, they cannot and none is delivered.',
  requestUp: { putWebhook: { schema: webhookEndpointInputBeforeStoreEvents } },
  responseDown: storeEventAnswers,
  eventDown: (event) => (isStoreEventKind(event.type) ? undefined : event),
  documentDown: (document) => {
    eachOperationSchema(document, Object.keys(storeEventAnswers), 'response', withoutStoreEvents);
    eachOperationSchema(document, ['putWebhook'], 'request', withoutStoreEvents);
    const webhooks = isObject(document.webhooks) ? document.webhooks : {};
    for (const kind of storeEventKind.options) delete webhooks[kind];
  },
};

export const sandbox: ApiVersionChange = {
  name: 'sandbox',
  description:
    'The sandbox’s test helpers (advance an order, place a test order, reset test data) and the test-mode webhook stream; before, none of them exists.',
  addedOperations: ['advanceTestOrder', 'placeTestStoreOrder', 'resetTestData', 'streamWebhooks'],
};

/** Oldest concern first: the order the changelog lists them in. */
export const changes20261201: readonly ApiVersionChange[] = [
  storeBusyStatus,
  orderAcceptBy,
  itemAvailability,
  specialHours,
  storeEvents,
  sandbox,
];
