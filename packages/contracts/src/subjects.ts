import { addCartItemInput, pricedCart, removeCartItemInput, updateCartItemInput } from './cart.js';
import { z } from 'zod';
import {
  catalogIngestList,
  catalogIngestStatus,
  catalogSetNotification,
  catalogSetDryRun,
} from './catalog.js';
import { dateTime, guid, listPageQuery, pageQuery } from './common.js';
import { chargeOwners, chargeOwnersInput } from './ledger.js';
import { bytesReply, defineSubject } from './messaging.js';
import {
  addressInput,
  order,
  orderStatusChange,
  orderRequest,
  storeOrderList,
  storeOrdersQuery,
  savedAddress,
  savedAddressList,
  validatedOrder,
} from './orders.js';
import {
  authorizeInput,
  captureInput,
  charge,
  refundInput,
  releaseInput,
  vaultCardInput,
  vaultedCard,
  vaultedCardList,
} from './payments.js';
import {
  commerceStore,
  commerceStoreList,
  commerceStoreWithSecret,
  discoverStoresInput,
  discoverStoresResult,
  marketfrontStore,
  orderContext,
  orderSubmissionSecrets,
  postalAddress,
  resolvedLocation,
  setStoreStatusInput,
  storeProfileInput,
  storeStatus,
} from './stores.js';
import {
  itemAvailabilityList,
  MAX_DENIED_ITEMS,
  MAX_ITEM_AVAILABILITY_CHANGES,
  setItemAvailabilityInput,
  specialHours,
} from './store-operations.js';
import {
  webhookDeliveriesQuery,
  webhookDelivery,
  webhookDeliveryList,
  webhookDeliveryAttempts,
  webhookEndpoint,
  webhookEndpointInput,
  webhookEndpointWithSecret,
  webhookStreamOpened,
  webhookStreamPage,
  webhookStreamReadInput,
} from './webhooks.js';
import { orderProfile } from './order-profile.js';
import { orderSummaryList, orderTimeline, partnerOrdersQuery } from './partner-orders.js';
import { serviceResetReply, testAdvanceInput, testStoreOrderInput } from './sandbox.js';

/**
 * Test mode only (docs/guide/sandbox.md#reset): delete every row of the calling test tenant
 * in the answering service, and say how many of each table.
 */
const testReset = (service: 'stores' | 'catalog' | 'ordering' | 'payments') =>
  defineSubject(service, 'v1.test.reset', z.object({}), serviceResetReply);

const byStoreId = z.object({ storeId: guid });

const activeCatalog = z.object({
  storeId: guid,
  catalogSetId: guid,
  versionId: guid,
  currency: z.string(),
  etag: z.string(),
  activatedAt: dateTime,
});

/**
 * Where admin changes (a key revoked, a partner suspended) tell every gateway replica to forget
 * the cached keys they name: a plain publish, which every replica hears (no queue group).
 */
export const authInvalidationSubject = (prefix: string) => `${prefix}.gateway.v1.auth.invalidate`;

/** Request/reply subjects, grouped by the service that answers them. */
export const subjects = {
  stores: {
    /** Commerce: create or replace the caller's store profile. */
    upsert: defineSubject(
      'stores',
      'v1.upsert',
      z.object({ storeId: guid, profile: storeProfileInput }),
      z.object({ store: commerceStoreWithSecret, created: z.boolean() }),
    ),
    /** Commerce: one of the caller's stores. */
    get: defineSubject('stores', 'v1.get', byStoreId, commerceStore),
    /** Commerce: the caller's stores, oldest first. */
    list: defineSubject('stores', 'v1.list', pageQuery, commerceStoreList),
    /**
     * Commerce: a new order-submission signing secret (shown this once); the previous one
     * keeps signing alongside for the overlap (STORES_SUBMISSION_SECRET_OVERLAP_MS).
     */
    rotateSubmissionSecret: defineSubject(
      'stores',
      'v1.order-submission.rotate-secret',
      byStoreId,
      commerceStoreWithSecret,
    ),
    /** Ordering's submitter only: the secrets that sign the store's order submissions now. */
    submissionSecrets: defineSubject(
      'stores',
      'v1.order-submission.secrets',
      byStoreId,
      orderSubmissionSecrets,
    ),
    getStatus: defineSubject('stores', 'v1.status.get', byStoreId, storeStatus),
    setStatus: defineSubject(
      'stores',
      'v1.status.set',
      z.object({ storeId: guid, change: setStoreStatusInput }),
      storeStatus,
    ),
    /**
     * Ordering only: pause a store whose orders were not accepted in time 3 times in a row
     * (`pausedBy: platform`, until its partner resumes it; docs/guide/orders.md#acceptance-window).
     */
    platformPause: defineSubject(
      'stores',
      'v1.status.platform-pause',
      z.object({ storeId: guid }),
      storeStatus,
    ),
    /** Commerce: the store's special hours (dates in its time zone). */
    getSpecialHours: defineSubject('stores', 'v1.special-hours.get', byStoreId, specialHours),
    /** Commerce: replace the store's special hours. */
    setSpecialHours: defineSubject(
      'stores',
      'v1.special-hours.set',
      specialHours.extend({ storeId: guid }),
      specialHours,
    ),
    /** Commerce: one of the caller's stores' current item availability overrides. */
    getItemAvailability: defineSubject(
      'stores',
      'v1.item-availability.get',
      byStoreId,
      itemAvailabilityList,
    ),
    /** Commerce: set or clear overrides (items of the store's active catalog). */
    setItemAvailability: defineSubject(
      'stores',
      'v1.item-availability.set',
      setItemAvailabilityInput.extend({ storeId: guid }),
      itemAvailabilityList,
    ),
    /** Marketfront (and ordering's cache): any store's current overrides. */
    lookupItemAvailability: defineSubject(
      'stores',
      'v1.item-availability.lookup',
      byStoreId,
      itemAvailabilityList,
    ),
    /**
     * Ordering only: a pending order denied with the items that ran out makes them unavailable
     * until the end of the store's local day (REQUEST_INVALID, pointers `/itemIds/<i>`, for ids
     * not in the store's active catalog).
     */
    denyItems: defineSubject(
      'stores',
      'v1.item-availability.deny',
      z.object({ storeId: guid, itemIds: z.array(guid).min(1).max(MAX_DENIED_ITEMS) }),
      itemAvailabilityList,
    ),
    /** Marketfront: any store by id, as distribution partners see it. */
    lookup: defineSubject('stores', 'v1.lookup', byStoreId, marketfrontStore),
    /** Marketfront: stores near a location that offer a fulfillment type, nearest first. */
    discover: defineSubject('stores', 'v1.discover', discoverStoresInput, discoverStoresResult),
    /**
     * What an order needs of its store in one round trip: the store as distribution partners
     * see it, and whether it is online and inside its windows at `at` (default now).
     */
    orderContext: defineSubject(
      'stores',
      'v1.order-context',
      z.object({ storeId: guid, at: dateTime.optional() }),
      orderContext,
    ),
    /**
     * The store as it stands, for ordering to keep (validate derives the order context from it
     * with `orderContextAt`); `events.stores.v1.profile-changed` and store events say when it
     * changed.
     */
    orderProfile: defineSubject('stores', 'v1.order-profile', byStoreId, orderProfile),
    /** Resolve and geocode an address (ADDRESS_INVALID when it cannot be). */
    geocode: defineSubject(
      'stores',
      'v1.geocode',
      z.object({ address: postalAddress }),
      resolvedLocation.extend({ address: resolvedLocation.shape.address.unwrap() }),
    ),
    testReset: testReset('stores'),
  },
  catalog: {
    /** Commerce: accept a notification; the run is durable before the reply. */
    notify: defineSubject(
      'catalog',
      'v1.ingest.notify',
      catalogSetNotification.extend({ storeId: guid }),
      z.object({ catalogIngestId: guid, retryAfterSeconds: z.number().int().min(1) }),
    ),
    /** Commerce: one of the caller's ingest runs for that store. */
    status: defineSubject(
      'catalog',
      'v1.ingest.status',
      z.object({ storeId: guid, catalogIngestId: guid }),
      catalogIngestStatus,
    ),
    /** Commerce: the ingest runs of one of the caller's stores, newest first. */
    listIngests: defineSubject(
      'catalog',
      'v1.ingest.list',
      listPageQuery.extend({ storeId: guid }),
      catalogIngestList,
    ),
    /**
     * Commerce: a dry run of an ingest (download, validation, summary against the active
     * catalog); nothing is stored or activated.
     */
    dryRun: defineSubject(
      'catalog',
      'v1.ingest.validate',
      catalogSetNotification.extend({ storeId: guid }),
      catalogSetDryRun,
    ),
    /**
     * Stores only: which of these item ids the store's active CatalogSet lacks, and how many
     * items it has (the bound on a store's overrides). CATALOGSET_NOT_FOUND before the first
     * activation.
     */
    knownItems: defineSubject(
      'catalog',
      'v1.items.known',
      z.object({
        storeId: guid,
        itemIds: z.array(guid).min(1).max(MAX_ITEM_AVAILABILITY_CHANGES),
      }),
      z.object({
        catalogSetId: guid,
        versionId: guid,
        itemCount: z.number().int().nonnegative(),
        unknownItemIds: z.array(guid),
      }),
    ),
    /** The active CatalogSet's version, for caches (and a 304 check). */
    active: defineSubject('catalog', 'v1.active', byStoreId, activeCatalog),
    /**
     * The active CatalogSet, described: its version, ETag and how it is stored. The document
     * itself is read chunk by chunk (`documentChunk`), so no process holds more of it than
     * it needs at once; `notModified` when `ifNoneMatch` names the active ETag.
     */
    document: defineSubject(
      'catalog',
      'v1.document',
      z.object({ storeId: guid, ifNoneMatch: z.string().max(512).optional() }),
      activeCatalog.extend({
        notModified: z.boolean(),
        totalBytes: z.number().int().nonnegative(),
        chunks: z.number().int().positive(),
      }),
    ),
    /**
     * One chunk of a version's document, as bytes (concatenated in order they are the UTF-8
     * JSON). Any replica answers: versions are immutable. CATALOGSET_NOT_FOUND once the
     * version is pruned (a newer one was activated twice since).
     */
    documentChunk: defineSubject(
      'catalog',
      'v1.document.chunk',
      z.object({ versionId: guid, index: z.number().int().min(0).max(10_000) }),
      bytesReply,
    ),
    testReset: testReset('catalog'),
  },
  ordering: {
    /** Marketfront cart helpers: (cart, operation) → the new cart, priced; nothing is stored. */
    cartAdd: defineSubject('ordering', 'v1.cart.add', addCartItemInput, pricedCart),
    cartRemove: defineSubject('ordering', 'v1.cart.remove', removeCartItemInput, pricedCart),
    cartUpdate: defineSubject('ordering', 'v1.cart.update', updateCartItemInput, pricedCart),
    /**
     * Marketfront: save an address for the calling end user, geocoded; `created` is false
     * when the end user had saved the same address (its addressId is kept).
     */
    saveAddress: defineSubject(
      'ordering',
      'v1.addresses.save',
      addressInput,
      z.object({ address: savedAddress, created: z.boolean() }),
    ),
    /** Marketfront: the calling end user's saved addresses, newest first. */
    listAddresses: defineSubject('ordering', 'v1.addresses.list', z.object({}), savedAddressList),
    deleteAddress: defineSubject(
      'ordering',
      'v1.addresses.delete',
      z.object({ addressId: guid }),
      z.object({ deleted: z.literal(true) }),
    ),
    /** Marketfront: price and check an order, writing nothing. */
    validate: defineSubject('ordering', 'v1.orders.validate', orderRequest, validatedOrder),
    /**
     * Marketfront: place an order under the context's Idempotency-Key
     * (docs/guide/orders.md#idempotency). The payload is the HTTP body as it arrived (its
     * fingerprint is of that JSON); a final outcome is the reply (`encodePlaceReply`: its
     * head, then the recorded answer's text as bytes), recorded and replayed; a retryable
     * failure is an error.
     */
    place: defineSubject('ordering', 'v1.orders.place', z.unknown(), bytesReply),
    /** Marketfront: an order of the calling partner. */
    getOrder: defineSubject('ordering', 'v1.orders.get', z.object({ orderId: guid }), order),
    /** Marketfront: the orders the calling partner placed, newest first. */
    listOrders: defineSubject('ordering', 'v1.orders.list', partnerOrdersQuery, orderSummaryList),
    /** Marketfront: an order of the calling partner, step by step (placed, payment, store, status, webhooks). */
    orderTimeline: defineSubject(
      'ordering',
      'v1.orders.timeline',
      z.object({ orderId: guid }),
      orderTimeline,
    ),
    /** Commerce: the orders of one of the caller's stores, newest first. */
    listStoreOrders: defineSubject(
      'ordering',
      'v1.orders.list-by-store',
      storeOrdersQuery.extend({ storeId: guid }),
      storeOrderList,
    ),
    /** Commerce: move an order of one of the caller's stores along its status machine. */
    changeOrderStatus: defineSubject(
      'ordering',
      'v1.orders.status.set',
      z.object({ orderId: guid, change: orderStatusChange }),
      order,
    ),
    /**
     * Marketfront: register or replace the partner's webhook endpoint (docs/guide/webhooks.md). The
     * secret is in the answer only when this call created the endpoint.
     */
    putWebhook: defineSubject(
      'ordering',
      'v1.webhooks.put',
      webhookEndpointInput,
      z.object({ endpoint: webhookEndpointWithSecret, created: z.boolean() }),
    ),
    getWebhook: defineSubject('ordering', 'v1.webhooks.get', z.object({}), webhookEndpoint),
    /** A new signing secret, shown once; the previous one keeps signing for 24 hours. */
    rotateWebhookSecret: defineSubject(
      'ordering',
      'v1.webhooks.rotate-secret',
      z.object({}),
      webhookEndpointWithSecret,
    ),
    listWebhookDeliveries: defineSubject(
      'ordering',
      'v1.webhooks.deliveries.list',
      webhookDeliveriesQuery,
      webhookDeliveryList,
    ),
    /** One delivery's most recent tries, oldest first. */
    listWebhookDeliveryAttempts: defineSubject(
      'ordering',
      'v1.webhooks.deliveries.attempts',
      z.object({ deliveryId: guid }),
      webhookDeliveryAttempts,
    ),
    /** Deliver one again now, with its webhook-id, whatever became of it before. */
    resendWebhookDelivery: defineSubject(
      'ordering',
      'v1.webhooks.deliveries.resend',
      z.object({ deliveryId: guid }),
      webhookDelivery,
    ),
    /** Payments' reconciler: the orders and place attempts that hold these charges. */
    chargeOwners: defineSubject('ordering', 'v1.charges.owners', chargeOwnersInput, chargeOwners),
    /**
     * Test mode: move an order as its store would (docs/guide/sandbox.md#test-helpers): an
     * order the caller placed at a fixture store, or one at the caller's own store.
     */
    testAdvanceOrder: defineSubject(
      'ordering',
      'v1.test.orders.advance',
      testAdvanceInput.extend({ orderId: guid }),
      order,
    ),
    /** Test mode: place an order at the calling commerce partner's own store, as a customer. */
    testPlaceStoreOrder: defineSubject(
      'ordering',
      'v1.test.stores.orders.place',
      testStoreOrderInput.extend({ storeId: guid }),
      order,
    ),
    testReset: testReset('ordering'),
    /**
     * Test mode: start keeping the calling tenant's stream log, if not yet
     * (docs/guide/sandbox.md#webhook-stream); its signing secret either way.
     */
    openWebhookStream: defineSubject(
      'ordering',
      'v1.webhooks.stream.open',
      z.object({}),
      webhookStreamOpened,
    ),
    /** Test mode: the calling tenant's stream log after a sequence number, oldest first. */
    readWebhookStream: defineSubject(
      'ordering',
      'v1.webhooks.stream.read',
      webhookStreamReadInput,
      webhookStreamPage,
    ),
  },
  payments: {
    /**
     * Marketfront: vault a card for the calling end user; `created` is false when the end
     * user had vaulted the same card before (its paymentId is kept). The only message that
     * carries a card number and CVC.
     */
    vaultCard: defineSubject(
      'payments',
      'v1.cards.vault',
      vaultCardInput,
      z.object({ card: vaultedCard, created: z.boolean() }),
    ),
    /** Marketfront: the calling end user's cards, newest first. */
    listCards: defineSubject('payments', 'v1.cards.list', z.object({}), vaultedCardList),
    /** Marketfront: remove one of the calling end user's cards. */
    deleteCard: defineSubject(
      'payments',
      'v1.cards.delete',
      z.object({ paymentId: guid }),
      z.object({ deleted: z.literal(true) }),
    ),
    /**
     * Ordering: whether `paymentId` is a live card of the request's partner and end user
     * (validate's PAYMENT_TOKEN_INVALID check); a deleted card is not owned.
     */
    cardOwned: defineSubject(
      'payments',
      'v1.cards.owned',
      z.object({ paymentId: guid }),
      z.object({ owned: z.boolean() }),
    ),
    /** Ordering: hold an amount on the end user's card (place). */
    authorize: defineSubject('payments', 'v1.charges.authorize', authorizeInput, charge),
    capture: defineSubject('payments', 'v1.charges.capture', captureInput, charge),
    /** Ordering: release whatever an order's attempt holds (a settled or expired key). */
    release: defineSubject(
      'payments',
      'v1.charges.release',
      releaseInput,
      z.object({ charge: charge.nullable() }),
    ),
    refund: defineSubject('payments', 'v1.charges.refund', refundInput, charge),
    /**
     * Ordering's test helper only: the platform's sandbox customer's succeeding test card for
     * the request's end user, vaulted on the sandbox processor (kept on a second call), so a
     * test order at a commerce partner's own store can be paid by CARD
     * (docs/guide/sandbox.md#placing-an-order-at-your-store) while no card number ever
     * leaves payments.
     */
    sandboxCustomerCard: defineSubject(
      'payments',
      'v1.cards.sandbox-customer',
      z.object({}),
      z.object({ paymentId: guid }),
    ),
    testReset: testReset('payments'),
  },
} as const;

/**
 * A core NATS message (no payload, no reply) ordering publishes after it appended to a
 * tenant's stream log, so the gateway's open streams read at once instead of polling.
 */
export const webhookStreamWake = {
  /** Below the prefix: the subject of one tenant's wake-ups. */
  subject: (tenantId: string) => `ordering.v1.webhooks.stream-wake.${tenantId}`,
  /** Below the prefix: every tenant's (permissions). */
  wildcard: 'ordering.v1.webhooks.stream-wake.*',
} as const;
