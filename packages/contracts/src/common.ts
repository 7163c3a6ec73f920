import { z } from 'zod';

/**
 * A GUID string: 8-4-4-4-12 hex digits, any version. GUIDs compare case-insensitively
 * (partners on some platforms emit upper case): parsing lower-cases them, so every
 * comparison and every response sees one spelling.
 */
export const guid = z.guid().toLowerCase();

/** An ISO-8601 UTC instant, e.g. `2026-11-22T10:00:00Z` (offsets are not accepted). */
export const dateTime = z.iso.datetime();

/**
 * A money amount in major units of a currency (docs/guide/payments.md#money); precision is checked
 * per currency.
 */
export const moneyAmount = z.number().finite().nonnegative().max(1_000_000_000);

/**
 * Every `errors[]` of this API holds at most this many entries
 * (docs/guide/errors.md#invalid-requests).
 */
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

/** RFC 9457 ProblemDetail as the gateway sends it (docs/guide/errors.md#problemdetail). */
export const problemDetail = z
  .object({
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
  })
  .meta({ id: 'ProblemDetail' });
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

/** The most rows one page of this API's newer lists holds. */
export const maxListPage = 100;

/**
 * The query of the newer lists (newest first, by an opaque keyset cursor): `limit` rows at
 * most, `before` the previous page's nextCursor. Unknown parameters are refused (400), not
 * ignored, so a misspelt filter never reads as "everything".
 */
export const listPageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(maxListPage).default(20),
  before: z.string().min(1).max(200).optional(),
});
export type ListPageQuery = z.infer<typeof listPageQuery>;

/** Escape one reference token of an RFC 6901 JSON Pointer. */
export function escapePointerToken(token: string | number): string {
  return String(token).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Build a rooted RFC 6901 JSON Pointer from path segments (`[]` is the whole document, ``). */
export function toJsonPointer(path: readonly PropertyKey[]): string {
  return path.map((segment) => `/${escapePointerToken(String(segment))}`).join('');
}

/**
 * How many values parsed JSON holds, and whether any string in it (value or property name)
 * holds U+0000. Iterative (bodies nested 100,000 levels deep are legal JSON) and without
 * allocation per value: it runs on every request.
 */
function scanJson(root: unknown): { values: number; hasNul: boolean } {
  let values = 0;
  let hasNul = false;
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    values++;
    if (typeof value === 'string') {
      if (value.includes('\0')) hasNul = true;
    } else if (Array.isArray(value)) {
      for (const element of value) pending.push(element);
    } else if (typeof value === 'object' && value !== null) {
      for (const key in value) {
        if (key.includes('\0')) hasNul = true;
        pending.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return { values, hasNul };
}

interface PathNode {
  readonly value: unknown;
  readonly key: PropertyKey | undefined;
  readonly parent: PathNode | undefined;
}

function pathOf(node: PathNode): PropertyKey[] {
  const path: PropertyKey[] = [];
  for (let at: PathNode | undefined = node; at?.key !== undefined; at = at.parent) {
    path.push(at.key);
  }
  return path.reverse();
}

/**
 * An issue at every string (value or property name) holding U+0000, which Postgres text
 * and jsonb cannot store, so no string of any contract may contain it. In document order,
 * capped like every errors[].
 */
function nulCharacterIssues(root: unknown): z.core.$ZodIssue[] {
  const issues: z.core.$ZodIssue[] = [];
  const report = (node: PathNode) =>
    issues.push({
      code: 'custom',
      path: pathOf(node),
      message: 'Must not contain the NUL character (U+0000)',
      params: { code: 'INVALID_CHARACTER' },
      input: undefined,
    });
  const pending: PathNode[] = [{ value: root, key: undefined, parent: undefined }];
  for (let node = pending.pop(); node && issues.length < maxProblemErrors; node = pending.pop()) {
    const current = node.value;
    if (typeof node.key === 'string' && node.key.includes('\0')) report(node);
    if (typeof current === 'string') {
      if (current.includes('\0')) report(node);
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
 * Inputs of at most this many JSON values have every problem reported. Larger invalid
 * inputs report the first one found: zod spends about 3 µs on each problem, and a hostile
 * 1 MB body holds a million of them (3 s of CPU and a gigabyte of memory).
 */
const FULL_REPORT_MAX_VALUES = 2_000;

const stopAtFirstIssue = { abortEarly: true } as z.core.ParseContext<z.core.$ZodIssue>;

export type ContractParseResult<T> =
  | { success: true; data: T }
  | {
      success: false;
      error: z.ZodError;
      /** Only the first problem was looked for (the input is too large to report them all). */
      firstOnly: boolean;
    };

/**
 * Validate input against a contract schema: the one entry point every service, the gateway
 * and the catalog validator use, so rules that hold for every contract are applied once,
 * here, rather than per field: no NUL character in any string, and a cost bounded by the
 * input's size whatever it holds (a first pass stops at the first problem; only small
 * inputs are parsed again to report every problem).
 */
export function parseContract<S extends z.ZodType>(
  schema: S,
  input: unknown,
): ContractParseResult<z.output<S>> {
  const { values, hasNul } = scanJson(input);
  if (hasNul) {
    return { success: false, error: new z.ZodError(nulCharacterIssues(input)), firstOnly: false };
  }
  const quick = schema.safeParse(input, stopAtFirstIssue);
  if (quick.success) return quick;
  if (values > FULL_REPORT_MAX_VALUES) {
    return { success: false, error: quick.error, firstOnly: true };
  }
  const full = schema.safeParse(input);
  return full.success ? full : { success: false, error: full.error, firstOnly: false };
}
