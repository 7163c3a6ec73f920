// The text of every error code's documentation: what happened, what to do, the rules behind
// it and a typical occurrence. Rendered by error-pages.ts.
import type { ErrorCode, OrderError } from '@pcp/contracts';
import type { GuideSection } from './guides.js';

/** What a partner reads about one error code: its page and its OpenAPI examples. */
export interface ErrorDoc {
  /** What happened and why. */
  readonly description: string;
  /** What to do about it, including whether and how to retry. */
  readonly action: string;
  /** The guide section holding the rules behind the code: the page links to it. */
  readonly rules: GuideSection;
  /** A typical occurrence: the ProblemDetail's detail, the path it answered, its errors[]. */
  readonly example: {
    readonly detail: string;
    readonly instance: string;
    readonly errors?: readonly OrderError[];
  };
}

const STORE_ID = '5f1e9c3a-7b2d-4e8f-9a6c-1d0b3e5f7a92';
const ORDER_ID = '0b9d7e4c-6a2f-4f1e-8c3d-2a1b0c9d8e7f';
const RETRY_WITH_SAME_KEY =
  'On place, retry with the same Idempotency-Key and body: the attempt resumes where it ' +
  'stopped and never charges twice.';
const RECORDED =
  'On place this outcome is the final answer of its Idempotency-Key, replayed to a retry ' +
  '(Idempotent-Replayed: true): a new attempt needs a new key.';

/**
 * Every error code's page text (docs/guide/errors.md#error-codes and the spec's error tables). A
 * code added to `errorCodes` without an entry here fails the type check.
 */
export const errorDocs = {
  UNAUTHORIZED: {
    rules: { guide: 'authentication', heading: 'API keys' },
    description:
      'The request carried no API key, a malformed one, or one that is unknown or revoked. ' +
      'Every /v1 path needs a key of your partner; the answer carries WWW-Authenticate: Bearer.',
    action:
      'Send a valid key as Authorization: Bearer <key>; replace a revoked key with a new one ' +
      'from your operator. Repeating the same request does not help, and an address that keeps ' +
      'failing is answered 429 RATE_LIMITED for a while.',
    example: {
      detail: 'Send a valid API key as Authorization: Bearer <key>',
      instance: '/v1/commerce/stores',
    },
  },
  SESSION_USER_REQUIRED: {
    rules: { guide: 'authentication', heading: 'End users' },
    description:
      'The request acts for an end user and did not say which: X-End-User-Id is required on ' +
      'place, on cards and saved addresses, and on validate when the order refers to a saved ' +
      'addressId.',
    action:
      'Send your id of the end user as X-End-User-Id (1 to 128 printable ASCII characters) ' +
      'and repeat the request.',
    example: {
      detail: 'Send the end user as X-End-User-Id',
      instance: '/v1/marketfront/payments/cards',
    },
  },
  FORBIDDEN: {
    rules: { guide: 'authentication', heading: 'Partner kinds' },
    description:
      'The key belongs to a partner of the other kind: /v1/commerce is for commerce partners ' +
      '(stores, catalogs, their orders) and /v1/marketfront for distribution partners ' +
      '(discovery, carts, orders, cards, webhooks).',
    action: 'Call with a key of the right kind of partner. Retrying does not change the answer.',
    example: {
      detail: 'This endpoint is for distribution partners',
      instance: '/v1/marketfront/stores/discover',
    },
  },
  CSRF_REJECTED: {
    rules: { guide: 'authentication', heading: 'Console sessions' },
    description:
      'A request authenticated by the console session cookie was refused as possibly forged ' +
      'by another site: a POST, PUT, PATCH or DELETE without the X-CSRF-Token header or with ' +
      "one that is not the session's csrfToken, or any request the browser marked " +
      'Sec-Fetch-Site: cross-site. Requests with an API key (Authorization: Bearer) never get it.',
    action:
      'Send the csrfToken that sign-in (or GET /v1/sessions/current) answered as X-CSRF-Token, ' +
      'from a page of the gateway’s own origin. Retrying without it does not change the answer.',
    example: {
      detail: "Send the session's csrfToken as X-CSRF-Token",
      instance: '/v1/commerce/stores/5f1e9c3a-7b2d-4e8f-9a6c-1d0b3e5f7a92/status',
    },
  },
  PAYMENT_TYPE_NOT_ALLOWED: {
    rules: { guide: 'payments', heading: 'Payment types' },
    description:
      'Your partner may not take this payment type (paymentType of an order, or CARD when ' +
      'vaulting a card). The operator sets the payment types each partner may take.',
    action: `Use a payment type you are allowed, or ask the operator to allow this one. ${RECORDED}`,
    example: {
      detail: 'This partner may not take CARD payments',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'PAYMENT_TYPE_NOT_ALLOWED',
          message: 'This partner may not take CARD payments',
          pointer: '/paymentType',
        },
      ],
    },
  },
  REQUEST_INVALID: {
    rules: { guide: 'errors', heading: 'Invalid requests' },
    description:
      "The request does not match the API's contract: invalid JSON, a missing field, a " +
      'wrong type, an unknown enum value, a value out of its range (busy extraPrepMinutes ' +
      'outside 5..120, more than 1,000 item availability entries or 366 special days), a ' +
      'malformed id, parameter or header, a cursor that was not issued, or an item ' +
      'override the store cannot take: an item id its active catalog lacks (item ' +
      'availability, unavailableItemIds), an until in the past or over 366 days ahead, or ' +
      'more overrides than the catalog has items. ' +
      'errors[] lists each problem with an RFC 6901 pointer into the body (null for a ' +
      'parameter or header, which its message names).',
    action:
      'Fix the request as errors[] says and send it again: the same request always fails the ' +
      'same way, so it is not retryable.',
    example: {
      detail: 'The request has 2 invalid fields',
      instance: '/v1/marketfront/orders/validate',
      errors: [
        { code: 'REQUIRED', message: 'Required', pointer: '/cart/storeId' },
        {
          code: 'INVALID_VALUE',
          message: 'Invalid option: expected one of "PICKUP"|"DELIVERY_BY_MERCHANT"',
          pointer: '/fulfillment/mode',
        },
      ],
    },
  },
  CLIENT_CONTEXT_REQUIRED: {
    rules: { guide: 'orders', heading: 'Order request' },
    description:
      'The order has no client object, or its ip or userAgent is missing or blank: every ' +
      "validate and place carries the end customer's context.",
    action:
      "Send client.ip (the customer's public address: behind a proxy or CDN, the first " +
      "address of the forwarded-for chain) and client.userAgent (the customer's browser or " +
      'app), then send the order again.',
    example: {
      detail: 'Send client.ip and client.userAgent of the end customer',
      instance: '/v1/marketfront/orders/validate',
      errors: [
        {
          code: 'CLIENT_CONTEXT_REQUIRED',
          message: 'Send client.ip and client.userAgent of the end customer',
          pointer: '/client/ip',
        },
      ],
    },
  },
  API_VERSION_INVALID: {
    rules: { guide: 'versioning', heading: 'The PCP-Version header' },
    description:
      'The PCP-Version header is not one of the API versions: not a YYYY-MM-DD date the ' +
      'platform lists, sent more than once, or empty. The request was not run.',
    action:
      'Send one of the versions of the changelog as PCP-Version, or leave the header out to ' +
      'use your pinned version. Retrying the same header does not change the answer.',
    example: {
      detail: 'PCP-Version must be one of the API versions: 2026-11-01, 2026-12-01',
      instance: '/v1/marketfront/stores/discover',
    },
  },
  CLIENT_IP_INVALID: {
    rules: { guide: 'orders', heading: 'Order request' },
    description:
      'client.ip is not an IP address, or it is private, loopback, link-local, CGNAT or ' +
      "reserved: it must be the end customer's public address, never your server's.",
    action:
      "Send the customer's public address as seen by your edge (the first address of the " +
      'forwarded-for chain), then send the order again.',
    example: {
      detail: 'client.ip must be the end customer’s public address',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'CLIENT_IP_INVALID',
          message: 'client.ip must be the end customer’s public address',
          pointer: '/client/ip',
        },
      ],
    },
  },
  CLIENT_USER_AGENT_INVALID: {
    rules: { guide: 'orders', heading: 'Order request' },
    description: 'client.userAgent is longer than 512 characters.',
    action: "Send the customer's user agent cut to at most 512 characters.",
    example: {
      detail: 'client.userAgent must be at most 512 characters',
      instance: '/v1/marketfront/orders/validate',
      errors: [
        {
          code: 'CLIENT_USER_AGENT_INVALID',
          message: 'client.userAgent must be at most 512 characters',
          pointer: '/client/userAgent',
        },
      ],
    },
  },
  CATALOGSET_REQUIRED: {
    rules: { guide: 'carts', heading: 'Errors' },
    description:
      'A new cart (cart null) was started without catalogSetId and storeId. The cart helpers ' +
      'report it inside errors[] of a 400 CART_INVALID.',
    action:
      "Start the cart with the storeId and the catalogSetId of the store's active CatalogSet " +
      "(the store's catalogSetId, or GET /v1/marketfront/stores/{storeId}/catalogset).",
    example: {
      detail: 'A new cart needs catalogSetId and storeId',
      instance: '/v1/marketfront/carts/add',
      errors: [
        {
          code: 'CATALOGSET_REQUIRED',
          message: 'A new cart needs catalogSetId and storeId',
          pointer: '/catalogSetId',
        },
      ],
    },
  },
  CART_INVALID: {
    rules: { guide: 'carts', heading: 'Errors' },
    description:
      'The cart operation cannot be applied to what it touches (the added item, the updated ' +
      'line, the removed lineItemId). errors[] says why, with pointers into the request. An ' +
      'item the store marked unavailable (an item availability override, or an item it ' +
      'denied an order for) is ITEM_UNAVAILABLE until the override ends, although the ' +
      'CatalogSet still lists it.',
    action:
      'Fix the request as errors[] says: pick available items and valid modifier choices, or, ' +
      "after a catalog change, start again from the store's current CatalogSet. The store's " +
      'current overrides are at GET /v1/marketfront/stores/{storeId}/item-availability.',
    example: {
      detail: 'The item cannot be added; see errors',
      instance: '/v1/marketfront/carts/add',
      errors: [
        {
          code: 'MODIFIER_REQUIRED',
          message: 'Choose at least 1 in Choose a side',
          pointer: '/item/modifierGroups',
        },
      ],
    },
  },
  CARD_INVALID: {
    rules: { guide: 'payments', heading: 'Cards' },
    description:
      'The card fails its checks: the number fails the Luhn check or belongs to no known ' +
      'network, the expiry is past, or the CVC has the wrong length for the network. errors[] ' +
      'points at each field.',
    action: 'Ask the customer to correct the card details, then vault the card again.',
    example: {
      detail: 'The card is not valid',
      instance: '/v1/marketfront/payments/cards',
      errors: [{ code: 'CARD_INVALID', message: 'The card has expired', pointer: '/expYear' }],
    },
  },
  MISSING_IDEMPOTENCY_KEY: {
    rules: { guide: 'orders', heading: 'Idempotency' },
    description: 'Place was called without an Idempotency-Key header.',
    action:
      'Send Idempotency-Key with a fresh UUID v4 for each order attempt, and keep it to retry ' +
      'that attempt. Nothing was recorded.',
    example: {
      detail: 'Send an Idempotency-Key header: a fresh UUID for each order attempt',
      instance: '/v1/marketfront/orders/place',
    },
  },
  IDEMPOTENCY_KEY_IN_PROGRESS: {
    rules: { guide: 'orders', heading: 'Idempotency' },
    description:
      'An earlier request with this Idempotency-Key is still running (it may be charging the ' +
      'card or waiting for the store).',
    action:
      'Wait the Retry-After seconds, then send the same request with the same key, unchanged: ' +
      'you get the outcome of the attempt once it has finished. A new key could place the ' +
      'order twice.',
    example: {
      detail: 'An earlier request with this Idempotency-Key is still running; retry it unchanged',
      instance: '/v1/marketfront/orders/place',
    },
  },
  IDEMPOTENCY_KEY_CONFLICT: {
    rules: { guide: 'orders', heading: 'Idempotency' },
    description:
      'This Idempotency-Key was used before with another body, or by another partner or end ' +
      'user: a key identifies one attempt.',
    action:
      "Resend the original body to get that attempt's outcome, or use a new key for a " +
      'different order.',
    example: {
      detail: 'This Idempotency-Key was used with another body, partner or end user; use a new key',
      instance: '/v1/marketfront/orders/place',
    },
  },
  ORDER_INVALID: {
    rules: { guide: 'orders', heading: 'Validating an order' },
    description:
      'Place validated the order again and found business problems, the ones validate reports ' +
      'with isValid false (STORE_CLOSED, by the weekly or special hours; ITEM_UNAVAILABLE, ' +
      'an item the store marked unavailable included; ORDER_TOTAL_DIFFERENT and so on), ' +
      'listed in errors[] with pointers. Nothing was charged.',
    action:
      'Fix the order as errors[] says (validate it first: prices and availability may have ' +
      `changed since), then place it again. ${RECORDED}`,
    example: {
      detail: 'The order cannot be placed as it is; see errors',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'ORDER_TOTAL_DIFFERENT',
          message: 'The total is 25.65, not 23.41',
          pointer: '/amounts/total',
        },
      ],
    },
  },
  STORE_REJECTED: {
    rules: { guide: 'orders', heading: 'Store order submission' },
    description:
      'The store declined the order at its order-submission URL; errors[] carries its reasons ' +
      '(pointer null when the store named no element). The card authorization was released: ' +
      'nothing was charged.',
    action: `Show the store's reasons to the customer and change the order. ${RECORDED}`,
    example: {
      detail: 'The store did not accept the order',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'ITEM_UNAVAILABLE',
          message: 'Cheeseburger is sold out',
          pointer: '/cart/lineItems/0',
        },
      ],
    },
  },
  PAYMENT_DECLINED: {
    rules: { guide: 'payments', heading: 'Processor outcomes' },
    description:
      'The payment processor declined the card. errors[] carries the reason: ' +
      'INSUFFICIENT_FUNDS, INCORRECT_CVC, CARD_EXPIRED, CARD_LOST_OR_STOLEN (show only a ' +
      'generic decline message) or PAYMENT_FAILED.',
    action:
      'Ask the customer for another card, or for the right security code after ' +
      `INCORRECT_CVC, then place the order again. ${RECORDED}`,
    example: {
      detail: 'The card was declined',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'INSUFFICIENT_FUNDS',
          message: 'The card has insufficient funds',
          pointer: '/paymentId',
        },
      ],
    },
  },
  PAYMENT_FAILED: {
    rules: { guide: 'payments', heading: 'Processor outcomes' },
    description:
      'The payment processor had a temporary fault (PROCESSING_ERROR). The card was not ' +
      'charged and the attempt can resume.',
    action: `Retry after a short backoff. ${RETRY_WITH_SAME_KEY} After a few failures, ask for another card.`,
    example: {
      detail: 'The payment could not be processed; retry with the same Idempotency-Key',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'PROCESSING_ERROR',
          message: 'The processor could not process the card; retry later',
          pointer: '/paymentId',
        },
      ],
    },
  },
  PAYMENT_TOKEN_INVALID: {
    rules: { guide: 'payments', heading: 'Cards' },
    description:
      'The paymentId is not a vaulted card of this end user: unknown, deleted, or vaulted for ' +
      'another partner or end user.',
    action:
      "List the end user's cards (GET /v1/marketfront/payments/cards) and use one of their " +
      `paymentIds, or vault the card again. ${RECORDED}`,
    example: {
      detail: 'No vaulted card with this paymentId belongs to the end user',
      instance: '/v1/marketfront/orders/place',
      errors: [
        {
          code: 'PAYMENT_TOKEN_INVALID',
          message: 'No vaulted card with this paymentId belongs to the end user',
          pointer: '/paymentId',
        },
      ],
    },
  },
  STORE_NOT_FOUND: {
    rules: { guide: 'stores', heading: 'Store lookup' },
    description:
      'No store with this id exists for you: it is unknown, or it belongs to another commerce ' +
      'partner (whose stores are not disclosed).',
    action:
      'Run store discovery again and use a current storeId (a stale deep link goes back to ' +
      'discovery rather than retrying). Commerce partners create a store with ' +
      'PUT /v1/commerce/stores/{storeId}.',
    example: {
      detail: 'No store with that id exists',
      instance: `/v1/marketfront/stores/${STORE_ID}`,
    },
  },
  CATALOGSET_NOT_FOUND: {
    rules: { guide: 'catalogs', heading: 'Reading a catalog' },
    description:
      'The store has no active CatalogSet: no catalog ingest of it has succeeded yet. Inside ' +
      "a cart's errors[] the code means the cart's catalogSetId is no longer the store's " +
      'current one. Item availability overrides name items of the active catalog, so setting ' +
      'them before the first activation answers it too.',
    action:
      "Distribution partners: come back once the store's catalogSetId is set. Commerce " +
      'partners: notify the CatalogSet and poll its ingest until it succeeded.',
    example: {
      detail: 'This store has no active CatalogSet yet',
      instance: `/v1/marketfront/stores/${STORE_ID}/catalogset`,
    },
  },
  ORDER_NOT_FOUND: {
    rules: { guide: 'orders', heading: 'Reading orders' },
    description:
      'No order with this id is visible to you: it is unknown, was placed by another partner, ' +
      'or is not of one of your stores.',
    action: 'Use the orderId place answered (or its Location header), or list your orders.',
    example: { detail: 'No order with this id', instance: `/v1/marketfront/orders/${ORDER_ID}` },
  },
  CATALOG_INGEST_NOT_FOUND: {
    rules: { guide: 'catalogs', heading: 'Ingest status' },
    description: 'No catalog ingest with this id exists for this store.',
    action:
      'Poll the statusUrl the notification answered (also in its Location header), with the ' +
      'storeId you notified.',
    example: {
      detail: 'No catalog ingest with that id exists for this store',
      instance: `/v1/commerce/stores/${STORE_ID}/catalog-ingest/8a7b6c5d-4e3f-4a1b-9c2d-0e1f2a3b4c5d/status`,
    },
  },
  CARD_LIMIT_REACHED: {
    rules: { guide: 'payments', heading: 'Cards' },
    description: 'The end user already holds 25 vaulted cards, the most one end user may hold.',
    action: 'Delete cards the end user no longer uses, then vault the new one.',
    example: {
      detail: 'An end user holds at most 25 cards; delete one first',
      instance: '/v1/marketfront/payments/cards',
    },
  },
  STORE_LIMIT_REACHED: {
    rules: { guide: 'stores', heading: 'Store profile' },
    description:
      'Your partner already holds the most stores allowed, and this store id is a new one. ' +
      'Replacing an existing store still works.',
    action: 'Reuse the ids of stores you hold, or ask the operator to raise your limit.',
    example: {
      detail: 'A partner holds at most 1000 stores; this one would be a new one',
      instance: `/v1/commerce/stores/${STORE_ID}`,
    },
  },
  ADDRESS_LIMIT_REACHED: {
    rules: { guide: 'orders', heading: 'Saved addresses' },
    description: 'The end user already holds 50 saved addresses, the most one end user may hold.',
    action: 'Delete addresses the end user no longer uses, then save the new one.',
    example: {
      detail: 'An end user holds at most 50 saved addresses; delete one first',
      instance: '/v1/marketfront/addresses',
    },
  },
  CHARGE_NOT_FOUND: {
    rules: { guide: 'payments', heading: 'Charges' },
    description:
      'A payment charge the platform tried to capture, void or refund does not exist. Only ' +
      "the platform's own payment steps meet it; no partner request answers it.",
    action: 'If you see it, contact support quoting the requestId.',
    example: {
      detail: 'No charge with this id',
      instance: `/v1/commerce/orders/${ORDER_ID}/status`,
    },
  },
  IDEMPOTENCY_KEY_EXPIRED: {
    rules: { guide: 'orders', heading: 'Idempotency' },
    description:
      'The attempt this Idempotency-Key started never got its answer within 24 hours of the ' +
      "key's first use, so the platform settled it: any payment hold was released and no " +
      'order was placed.',
    action:
      'Place the order again with a new Idempotency-Key, after validating it again: prices and ' +
      'opening hours may have changed in a day.',
    example: {
      detail:
        'This Idempotency-Key was never answered within its 24 hours: its payment was released and no order was placed; place the order again with a new key',
      instance: '/v1/marketfront/orders/place',
    },
  },
  CHARGE_STATE_INVALID: {
    rules: { guide: 'payments', heading: 'Charges' },
    description:
      'A payment charge is not in a state that allows the step the platform tried (capturing ' +
      'a voided charge, for example). Only the platform’s own payment steps meet it.',
    action: 'If you see it, contact support quoting the requestId.',
    example: {
      detail: 'A charge that is voided cannot be captured',
      instance: `/v1/commerce/orders/${ORDER_ID}/status`,
    },
  },
  PAYMENT_PROCESSOR_REFUSED: {
    rules: { guide: 'payments', heading: 'Charges' },
    description:
      'The payment processor refused a step the platform took with a charge (a refund of an ' +
      'authorization it does not know, for example). The detail names the processor’s own ' +
      'code. Only the platform’s own payment steps meet it; a refund it refused is tried ' +
      'again and raised to operators.',
    action: 'If you see it, contact support quoting the requestId.',
    example: {
      detail: 'The payment processor refused to refund the charge: authorization_not_found',
      instance: `/v1/test/orders/${ORDER_ID}/advance`,
    },
  },
  WEBHOOK_NOT_FOUND: {
    rules: { guide: 'webhooks', heading: 'Registering an endpoint' },
    description: 'Your partner has no webhook endpoint registered.',
    action: 'Register one with PUT /v1/marketfront/webhooks.',
    example: {
      detail: 'No webhook endpoint is registered; PUT one first',
      instance: '/v1/marketfront/webhooks',
    },
  },
  WEBHOOK_DELIVERY_NOT_FOUND: {
    rules: { guide: 'webhooks', heading: 'Deliveries' },
    description: 'No webhook delivery with this id belongs to your partner.',
    action: 'List your deliveries (GET /v1/marketfront/webhooks/deliveries) for their ids.',
    example: {
      detail: 'No webhook delivery with this id',
      instance: '/v1/marketfront/webhooks/deliveries/7c6b5a49-3827-4160-9f8e-7d6c5b4a3928/resend',
    },
  },
  ORDER_STATUS_TRANSITION_INVALID: {
    rules: { guide: 'orders', heading: 'Order status' },
    description:
      "The move is not allowed from the order's current state and status. A pending order " +
      'whose acceptBy has passed can no longer be confirmed or moved: the platform cancels it ' +
      '(cancelledBy platform, "not accepted in time"), and when the two race, the deadline ' +
      'wins. unavailableItemIds go only with the cancel of a pending order.',
    action:
      'Read the order and send a move allowed from where it is. Sending its current status ' +
      'again is not an error: it changes nothing. Confirm orders before their acceptBy; an ' +
      'order cancelled by the platform is final.',
    example: {
      detail: 'An order that is pending cannot become ready',
      instance: `/v1/commerce/orders/${ORDER_ID}/status`,
    },
  },
  API_VERSION_DOWNGRADE: {
    rules: { guide: 'requests', heading: 'API version' },
    description:
      'The version asked for is older than the one your partner is pinned to. A partner ' +
      'moves its own pin only forward, so an integration built against a version is never ' +
      'moved back to one it did not see.',
    action:
      'Send your current pin or a newer one (GET …/api-version lists them). To try an older ' +
      'version, name it on each request with PCP-Version; to move the pin back, ask your ' +
      'operator.',
    example: {
      detail: 'Your partner is pinned to 2026-12-01: it can move to 2026-12-01 or later only',
      instance: '/v1/marketfront/api-version',
    },
  },
  ADDRESS_INVALID: {
    rules: { guide: 'stores', heading: 'Discovery' },
    description:
      'An address cannot be resolved: its postal code and place cannot be geocoded ' +
      '(discovery, a store profile, a saved address), or a saved addressId is unknown or not ' +
      "the end user's. errors[] points at the address.",
    action:
      'Correct the address (postal code, city, country) or send coordinates; for a saved ' +
      "address, list the end user's addresses and use one of their addressIds.",
    example: {
      detail: 'The address cannot be located',
      instance: '/v1/marketfront/stores/discover',
      errors: [
        {
          code: 'ADDRESS_INVALID',
          message: 'Unknown postal code 00000 in US',
          pointer: '/location/postalCode',
        },
      ],
    },
  },
  PAYMENT_VELOCITY_EXCEEDED: {
    rules: { guide: 'payments', heading: 'Card velocity limits' },
    description:
      'A guard against card testing: the end user tried to vault cards too often lately, or ' +
      'this card was declined too often lately across end users. The processor was not asked. ' +
      'On place the code comes inside errors[] of a 400 PAYMENT_DECLINED.',
    action:
      'Wait the Retry-After seconds before vaulting again; ask the end user for another card ' +
      'meanwhile. Do not retry automatically in a loop.',
    example: {
      detail: 'This card was declined too often lately; retry later',
      instance: '/v1/marketfront/payments/cards',
    },
  },
  RATE_LIMITED: {
    rules: { guide: 'authentication', heading: 'Rate limits' },
    description:
      "Your partner used up its budget for this route's class in the current minute, or this " +
      'address sent too many requests with a missing or invalid key.',
    action:
      'Wait the Retry-After seconds, then retry, and spread your requests (X-RateLimit-Remaining ' +
      `and X-RateLimit-Reset show the budget). ${RETRY_WITH_SAME_KEY} Ask the operator to raise ` +
      'your limits if you need more.',
    example: {
      detail: 'Rate limit of 100 writes per minute exceeded',
      instance: '/v1/marketfront/orders/place',
    },
  },
  CATALOG_INGEST_QUEUE_FULL: {
    rules: { guide: 'catalogs', heading: 'Ingest' },
    description:
      'Your partner already has the most catalog ingests waiting to start. The notification ' +
      'was refused and changed nothing.',
    action:
      'Wait the Retry-After seconds, then notify again. Notify a store once its CatalogSet ' +
      'changed, not on a schedule; ask the operator to raise the limit if you need more.',
    example: {
      detail: 'This partner already has 50 catalog ingests waiting to start; retry later',
      instance: '/v1/commerce/catalogset-notification',
    },
  },
  INTERNAL: {
    rules: { guide: 'errors', heading: 'Retrying' },
    description:
      'The platform failed unexpectedly; the answer carries no internal detail. The request ' +
      'may or may not have taken effect.',
    action:
      `Retry with exponential backoff. ${RETRY_WITH_SAME_KEY} If it persists, contact support ` +
      'quoting the requestId.',
    example: {
      detail: 'An internal error occurred; retry later or contact support',
      instance: `/v1/marketfront/orders/${ORDER_ID}`,
    },
  },
  PAYMENT_PROCESSOR_UNAVAILABLE: {
    rules: { guide: 'payments', heading: 'Processor outcomes' },
    description:
      'The payment processor did not answer in time or keeps failing, so the platform stopped ' +
      'calling it for a moment. On place nothing was charged and the key stays usable.',
    action: `Retry with exponential backoff. ${RETRY_WITH_SAME_KEY}`,
    example: {
      detail: 'The payment processor is unavailable; retry with the same Idempotency-Key',
      instance: '/v1/marketfront/orders/place',
    },
  },
  LIVE_PAYMENTS_NOT_CONFIGURED: {
    rules: { guide: 'payments', heading: 'Test mode payments' },
    description:
      'This deployment has no live payment processor configured, so live-mode card ' +
      'operations (vaulting a card, placing a card order, refunds) are refused; nothing was ' +
      'charged. Test mode still works: its cards go to the sandbox processor.',
    action:
      'Do not retry with this key. Use a test key (pcp_test_…) to try card payments here, or ' +
      'ask the operator to configure the live processor.',
    example: {
      detail:
        'This deployment has no live payment processor; use a test key (pcp_test_…) to charge test cards',
      instance: '/v1/marketfront/payments/cards',
    },
  },
  SANDBOX_PROCESSOR_UNVERIFIED: {
    rules: { guide: 'payments', heading: 'Test mode payments' },
    description:
      'A test-mode card operation (vaulting a card, placing a card order, a refund) was ' +
      'refused because the sandbox processor has not confirmed that it is a test processor: ' +
      'the platform sends test cards only to a processor that says it moves no real money. ' +
      'Nothing was charged; live mode is not affected.',
    action:
      'Retry after the Retry-After seconds: the platform asks the processor again. ' +
      `${RETRY_WITH_SAME_KEY} If it persists, contact support quoting the requestId.`,
    example: {
      detail:
        'Test-mode payments are unavailable: the sandbox processor has not confirmed that it is a test processor',
      instance: '/v1/marketfront/payments/cards',
    },
  },
  SERVICE_UNAVAILABLE: {
    rules: { guide: 'errors', heading: 'Retrying' },
    description:
      'A platform service the request needs is unavailable right now (restarting or ' +
      'overloaded).',
    action:
      'Retry after the Retry-After seconds when the answer has them, otherwise with ' +
      `exponential backoff and jitter. ${RETRY_WITH_SAME_KEY}`,
    example: {
      detail: 'The service is unavailable; retry later',
      instance: '/v1/marketfront/carts/add',
    },
  },
  UPSTREAM_TIMEOUT: {
    rules: { guide: 'errors', heading: 'Retrying' },
    description:
      "A platform service did not answer within the gateway's time limit. The request may " +
      'or may not have taken effect.',
    action:
      'Retry with exponential backoff. Reads, PUTs and a place with the same Idempotency-Key ' +
      'are safe to repeat; read the current state before repeating another write (an order ' +
      'status change, for example).',
    example: {
      detail: 'The request was not answered in time; retry later',
      instance: `/v1/commerce/orders/${ORDER_ID}/status`,
    },
  },
  NOT_FOUND: {
    rules: { guide: 'errors', heading: 'Error codes' },
    description:
      'No route matches this method and path. Under /v1 only an authenticated caller gets ' +
      'this answer.',
    action: 'Check the method and the path against the API reference (/docs).',
    example: { detail: 'No route GET /v1/marketfront/store', instance: '/v1/marketfront/store' },
  },
  PAYLOAD_TOO_LARGE: {
    rules: { guide: 'errors', heading: 'Invalid requests' },
    description: 'The request body is larger than the platform accepts.',
    action:
      'Send a smaller body: a cart holds at most 100 lines, and a CatalogSet is never sent ' +
      'in a request (the platform downloads it from your callbackUrl).',
    example: {
      detail: 'The request body is larger than this endpoint accepts',
      instance: '/v1/marketfront/orders/validate',
    },
  },
  UNSUPPORTED_MEDIA_TYPE: {
    rules: { guide: 'errors', heading: 'Invalid requests' },
    description: "The body's Content-Type is not application/json.",
    action: 'Send the body as JSON with Content-Type: application/json.',
    example: { detail: 'Send the body as application/json', instance: '/v1/marketfront/carts/add' },
  },
} as const satisfies Record<ErrorCode, ErrorDoc>;
