/**
 * Error categories a ProblemDetail's `errorCategory` can carry (docs/guide/errors.md#error-codes).
 */
export type ErrorCategory =
  | 'authentication'
  | 'authorization'
  | 'validation'
  | 'idempotency'
  | 'not_found'
  | 'order'
  | 'payment'
  | 'conflict'
  | 'rate_limit'
  | 'dependency'
  | 'internal';

/** What a top-level error code means over HTTP: one table for every service and the gateway. */
export interface ErrorCodeInfo {
  readonly status: number;
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly title: string;
}

const entry = (
  status: number,
  category: ErrorCategory,
  retryable: boolean,
  title: string,
): ErrorCodeInfo => ({ status, category, retryable, title });

/**
 * Every top-level `errorCode` the platform emits, with its HTTP status, category and
 * retryable flag (docs/guide/errors.md#error-codes). Codes not named by the contract are marked
 * below.
 */
export const errorCodes = {
  UNAUTHORIZED: entry(401, 'authentication', false, 'Unauthorized'),
  SESSION_USER_REQUIRED: entry(401, 'authentication', false, 'End user required'),
  FORBIDDEN: entry(403, 'authorization', false, 'Forbidden'),
  // Not named by the contract: a console session's write without its X-CSRF-Token, or any
  // request of a session sent from another site (docs/guide/authentication.md#console-sessions).
  CSRF_REJECTED: entry(403, 'authorization', false, 'Cross-site request refused'),
  PAYMENT_TYPE_NOT_ALLOWED: entry(403, 'payment', false, 'Payment type not allowed'),
  REQUEST_INVALID: entry(400, 'validation', false, 'Invalid request'),
  // A PCP-Version header that is not one of the API versions (contract §14).
  API_VERSION_INVALID: entry(400, 'validation', false, 'API version invalid'),
  CLIENT_CONTEXT_REQUIRED: entry(400, 'validation', false, 'Client context required'),
  CLIENT_IP_INVALID: entry(400, 'validation', false, 'Client IP invalid'),
  CLIENT_USER_AGENT_INVALID: entry(400, 'validation', false, 'Client user agent invalid'),
  CATALOGSET_REQUIRED: entry(400, 'validation', false, 'CatalogSet required'),
  CART_INVALID: entry(400, 'validation', false, 'Cart invalid'),
  CARD_INVALID: entry(400, 'validation', false, 'Card invalid'),
  MISSING_IDEMPOTENCY_KEY: entry(400, 'idempotency', false, 'Idempotency key required'),
  IDEMPOTENCY_KEY_IN_PROGRESS: entry(409, 'idempotency', true, 'Request in progress'),
  IDEMPOTENCY_KEY_CONFLICT: entry(422, 'idempotency', false, 'Idempotency key conflict'),
  // Not named by the contract: a key whose attempt never finished within its 24 hours. Its
  // payment was released and no order placed; it is the key's final answer (recorded).
  IDEMPOTENCY_KEY_EXPIRED: entry(400, 'idempotency', false, 'Idempotency key expired'),
  ORDER_INVALID: entry(400, 'order', false, 'Order invalid'),
  STORE_REJECTED: entry(400, 'order', false, 'Store rejected the order'),
  PAYMENT_DECLINED: entry(400, 'payment', false, 'Payment declined'),
  PAYMENT_FAILED: entry(400, 'payment', true, 'Payment failed'),
  PAYMENT_TOKEN_INVALID: entry(400, 'payment', false, 'Payment token invalid'),
  STORE_NOT_FOUND: entry(404, 'not_found', false, 'Store not found'),
  CATALOGSET_NOT_FOUND: entry(404, 'not_found', false, 'CatalogSet not found'),
  ORDER_NOT_FOUND: entry(404, 'not_found', false, 'Order not found'),
  // Not named by the contract: the spec's 404 for an unknown ingest id needs a code.
  CATALOG_INGEST_NOT_FOUND: entry(404, 'not_found', false, 'Catalog ingest not found'),
  // Not named by the contract: an end user's cards and saved addresses are capped (every
  // list built from input is).
  CARD_LIMIT_REACHED: entry(409, 'conflict', false, 'Card limit reached'),
  ADDRESS_LIMIT_REACHED: entry(409, 'conflict', false, 'Address limit reached'),
  // Not named by the contract: a commerce partner's stores are capped (they bound discovery).
  STORE_LIMIT_REACHED: entry(409, 'conflict', false, 'Store limit reached'),
  // Not named by the contract: ordering's charge operations (capture, void, refund) on a
  // charge that does not exist or is not in a state that allows them.
  CHARGE_NOT_FOUND: entry(404, 'not_found', false, 'Charge not found'),
  CHARGE_STATE_INVALID: entry(409, 'conflict', false, 'Charge state invalid'),
  // Not named by the contract: the processor refused such an operation (an authorization it
  // does not know, an amount beyond what is left); the message names the processor's code.
  PAYMENT_PROCESSOR_REFUSED: entry(409, 'dependency', false, 'Payment processor refused'),
  // Not named by the contract: the partner's webhook endpoint (none registered) and one of
  // its deliveries.
  WEBHOOK_NOT_FOUND: entry(404, 'not_found', false, 'Webhook endpoint not found'),
  WEBHOOK_DELIVERY_NOT_FOUND: entry(404, 'not_found', false, 'Webhook delivery not found'),
  ORDER_STATUS_TRANSITION_INVALID: entry(409, 'conflict', false, 'Order status transition invalid'),
  // Not named by the contract: a partner moving its API version pin back (§14: only forward).
  // A transition its current state refuses, as an order's status is: conflict, not validation.
  API_VERSION_DOWNGRADE: entry(409, 'conflict', false, 'API version downgrade'),
  ADDRESS_INVALID: entry(422, 'validation', false, 'Address invalid'),
  RATE_LIMITED: entry(429, 'rate_limit', true, 'Too many requests'),
  // Not named by the contract: card testing. An end user vaulting too often, or a card
  // declined too often lately, is refused without asking the processor until Retry-After.
  PAYMENT_VELOCITY_EXCEEDED: entry(429, 'rate_limit', true, 'Payment velocity exceeded'),
  // Not named by the contract: a partner's ingest runs waiting to start are capped, so one
  // partner's backlog cannot grow without bound (every list built from input is capped).
  CATALOG_INGEST_QUEUE_FULL: entry(429, 'rate_limit', true, 'Catalog ingest queue full'),
  INTERNAL: entry(500, 'internal', true, 'Internal server error'),
  PAYMENT_PROCESSOR_UNAVAILABLE: entry(503, 'dependency', true, 'Payment processor unavailable'),
  SERVICE_UNAVAILABLE: entry(503, 'dependency', true, 'Service unavailable'),
  // Not named by the contract: a live-mode card operation in a deployment with no live
  // processor configured; test mode (the sandbox processor) still works. Never the simulator.
  LIVE_PAYMENTS_NOT_CONFIGURED: entry(503, 'dependency', false, 'Live payments not configured'),
  // Not named by the contract: a test-mode card operation in production while the sandbox
  // processor has not declared itself a test processor (asked again after a pause).
  SANDBOX_PROCESSOR_UNVERIFIED: entry(503, 'dependency', true, 'Sandbox processor unverified'),
  UPSTREAM_TIMEOUT: entry(504, 'dependency', true, 'Upstream timeout'),
  // Transport-level failures the gateway must answer as ProblemDetail; the contract names
  // no code for them, so these follow the HTTP status they carry.
  NOT_FOUND: entry(404, 'not_found', false, 'Not found'),
  PAYLOAD_TOO_LARGE: entry(413, 'validation', false, 'Payload too large'),
  UNSUPPORTED_MEDIA_TYPE: entry(415, 'validation', false, 'Unsupported media type'),
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof errorCodes;

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(errorCodes, value);
}
