/**
 * The OrderError codes this client knows: the spec's (its last five refine PAYMENT_FAILED)
 * and the platform's own for order and cart checks. The list is open: the platform may add
 * codes at any time, so route every code through `orderErrorCode`.
 */
export const orderErrorCodes = [
  'ITEM_UNAVAILABLE',
  'PAYMENT_FAILED',
  'STORE_CLOSED',
  'DELIVERY_UNAVAILABLE',
  'OUTSIDE_AVAILABILITY_WINDOW',
  'MINIMUM_NOT_MET',
  'MODIFIER_REQUIRED',
  'ORDER_TOTAL_DIFFERENT',
  'OTHER',
  'INSUFFICIENT_FUNDS',
  'INCORRECT_CVC',
  'CARD_EXPIRED',
  'CARD_LOST_OR_STOLEN',
  'PROCESSING_ERROR',
  'PICKUP_UNAVAILABLE',
  'MODIFIER_INVALID',
  'ADDRESS_INVALID',
  'PRECISION_EXCEEDED',
  'SCHEDULED_TIME_REQUIRED',
  'SCHEDULED_TIME_IN_PAST',
  'SCHEDULED_TIME_NOT_ALLOWED',
  'INSTRUCTIONS_TOO_LONG',
  'CATALOGSET_REQUIRED',
  'CATALOGSET_NOT_FOUND',
  'CURRENCY_MISMATCH',
  'PAYMENT_TYPE_NOT_ALLOWED',
  'PAYMENT_TOKEN_INVALID',
  'QUANTITY_INVALID',
  'LINE_ITEM_NOT_FOUND',
  'LINE_ITEM_DUPLICATE',
  'CART_LIMIT_EXCEEDED',
] as const;

export type OrderErrorCode = (typeof orderErrorCodes)[number];

const known: ReadonlySet<string> = new Set(orderErrorCodes);

/** `code` if this client knows it, else `OTHER` (the spec: clients must not fail on new codes). */
export function orderErrorCode(code: string): OrderErrorCode {
  return known.has(code) ? (code as OrderErrorCode) : 'OTHER';
}
