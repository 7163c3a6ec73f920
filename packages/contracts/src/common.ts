import { z } from 'zod';

/**
 * A GUID string: 8-4-4-4-12 hex digits, any version. GUIDs compare case-insensitively
 * (partners on some platforms emit upper case): parsing lower-cases them, so every
 * comparison and every response sees one spelling.
 */
export const guid = z.guid().toLowerCase();

/** An ISO-8601 UTC instant, e.g. `2026-11-22T10:00:00Z` (offsets are not accepted). */
export const dateTime = z.iso.datetime();

/** A money amount in major units of a currency (contract §2); precision is checked per currency. */
export const moneyAmount = z.number().finite().nonnegative().max(1_000_000_000);

/** Every `errors[]` of this API holds at most this many entries (contract §6). */
export const maxProblemErrors = 100;

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
  errors: z.array(orderError).max(maxProblemErrors).optional(),
  /** How many more element errors there were than `errors` lists. */
  errorsOmitted: z.number().int().positive().optional(),
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

interface WalkNode {
  readonly value: unknown;
  readonly key: PropertyKey | undefined;
  readonly parent: WalkNode | undefined;
}

function pathOf(node: WalkNode): PropertyKey[] {
  const path: PropertyKey[] = [];
  for (let at: WalkNode | undefined = node; at?.key !== undefined; at = at.parent) {
    path.push(at.key);
  }
  return path.reverse();
}

/**
 * Issues for every string (value or property name) in parsed JSON that holds U+0000.
 * Postgres text and jsonb cannot store it, so no string of any contract may contain it.
 * Iterative (bodies nested 100,000 levels deep are legal JSON) and capped.
 */
export function nulCharacterIssues(value: unknown): z.core.$ZodIssue[] {
  const issues: z.core.$ZodIssue[] = [];
  const report = (path: PropertyKey[]) =>
    issues.push({
      code: 'custom',
      path,
      message: 'Must not contain the NUL character (U+0000)',
      params: { code: 'INVALID_CHARACTER' },
      input: undefined,
    });
  const pending: WalkNode[] = [{ value, key: undefined, parent: undefined }];
  for (let node = pending.pop(); node && issues.length < maxProblemErrors; node = pending.pop()) {
    const current = node.value;
    if (typeof node.key === 'string' && node.key.includes('\0')) report(pathOf(node));
    if (typeof current === 'string') {
      if (current.includes('\0')) report(pathOf(node));
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) {
        pending.push({ value: current[index], key: index, parent: node });
      }
    } else if (typeof current === 'object' && current !== null) {
      const keys = Object.keys(current);
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index]!;
        pending.push({ value: (current as Record<string, unknown>)[key], key, parent: node });
      }
    }
  }
  return issues;
}

/**
 * Validate input against a contract schema: the one entry point every service, the gateway
 * and the catalog validator use, so rules that hold for every contract (no NUL character in
 * any string) are applied once, here, rather than per field.
 */
export function parseContract<S extends z.ZodType>(
  schema: S,
  input: unknown,
): z.ZodSafeParseResult<z.output<S>> {
  const nul = nulCharacterIssues(input);
  if (nul.length > 0)
    return { success: false, error: new z.ZodError(nul) as z.ZodError<z.output<S>> };
  return schema.safeParse(input);
}
