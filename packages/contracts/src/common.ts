import { z } from 'zod';

/** A canonical GUID string: 8-4-4-4-12 hex digits, any version. */
export const guid = z.guid();

/** An ISO-8601 UTC instant, e.g. `2026-11-22T10:00:00Z` (offsets are not accepted). */
export const dateTime = z.iso.datetime();

/** A money amount in major units of a currency (contract §2); precision is checked per currency. */
export const moneyAmount = z.number().finite().nonnegative().max(1_000_000_000);

/**
 * One element-level error: the shape of `Order.errors[]` and `ProblemDetail.errors[]`.
 * `code` is an open enum; `pointer` is a rooted RFC 6901 pointer or null.
 */
export const orderError = z.object({
  code: z.string(),
  message: z.string(),
  pointer: z.string().nullable(),
});
export type OrderError = z.infer<typeof orderError>;

/** RFC 9457 ProblemDetail as the gateway sends it (contract §11). */
export const problemDetail = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string(),
  requestId: z.string(),
  timestamp: dateTime,
  errorCode: z.string(),
  errorCategory: z.string(),
  retryable: z.boolean(),
  errors: z.array(orderError).optional(),
});
export type ProblemDetail = z.infer<typeof problemDetail>;

export const partnerKind = z.enum(['commerce', 'distribution']);
export type PartnerKind = z.infer<typeof partnerKind>;

export const paymentType = z.enum(['CARD', 'PAY_AT_STORE']);
export type PaymentType = z.infer<typeof paymentType>;

export const fulfillmentType = z.enum(['PICKUP', 'DELIVERY_BY_MERCHANT']);
export type FulfillmentType = z.infer<typeof fulfillmentType>;

/** `limit`/`offset` query parameters of list endpoints, given as decimal strings. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
});
export type PageQuery = z.infer<typeof pageQuery>;

/** Escape one reference token of an RFC 6901 JSON Pointer. */
export function escapePointerToken(token: string | number): string {
  return String(token).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Build a rooted RFC 6901 JSON Pointer from path segments (`[]` is the whole document, ``). */
export function toJsonPointer(path: readonly PropertyKey[]): string {
  return path.map((segment) => `/${escapePointerToken(String(segment))}`).join('');
}
