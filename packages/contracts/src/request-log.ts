import { z } from 'zod';
import { apiVersion } from './api-versions.js';
import { dateTime } from './common.js';
import { partnerMode } from './sandbox.js';

/** The most entries one page of the request log holds. */
export const MAX_REQUEST_LOG_PAGE = 100;

/** An error code as the platform writes them (`STORE_NOT_FOUND`). */
const errorCodeText = z
  .string()
  .regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'an error code, such as STORE_NOT_FOUND');

/**
 * `GET /v1/{commerce|marketfront}/requests` (docs/guide/requests.md): newest first, by an opaque
 * cursor. Unknown parameters are refused, so a misspelt filter never reads as no filter.
 */
export const requestLogQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_REQUEST_LOG_PAGE).default(50),
  /** The nextCursor of the previous page. */
  before: z.string().max(200).optional(),
  /** `error`: every answer at 400 or above; or one status code. */
  status: z
    .string()
    .regex(/^(error|[1-5]\d{2})$/, 'error, or a status code such as 404')
    .optional(),
  errorCode: errorCodeText.optional(),
  /**
   * Only the requests read and answered in this version (docs/guide/versioning.md#deprecation):
   * what still calls a version about to go.
   */
  apiVersion: apiVersion.optional(),
});
export type RequestLogQuery = z.infer<typeof requestLogQuery>;

const requestLogEntryExample = {
  at: '2026-11-22T18:05:00.123Z',
  method: 'GET',
  path: '/v1/commerce/stores/0b9d7e4c-6a2f-4f1e-8c3d-2a1b0c9d8e7f',
  status: 404,
  errorCode: 'STORE_NOT_FOUND',
  requestId: '3b9f6a0e-2d1c-4c8e-9a7f-5e4d3c2b1a09',
  latencyMs: 4,
  apiVersion: '2026-12-01',
};

/** One request as the log keeps it: never its body, headers or query string. */
export const requestLogEntry = z
  .object({
    /** When the request arrived. */
    at: dateTime,
    method: z.string(),
    /** The URL path, without the query string. */
    path: z.string(),
    status: z.number().int(),
    /** The ProblemDetail's errorCode, when the answer was one. */
    errorCode: z.string().optional(),
    /** The request's id: the X-Request-Id of the answer. */
    requestId: z.string(),
    /**
     * The X-Request-Id you sent, when you sent one (its first 128 characters, any outside
     * printable ASCII as `?`): the request's own id is the platform's.
     */
    clientRequestId: z.string().optional(),
    /** The Idempotency-Key header as sent (its first 255 characters). */
    idempotencyKey: z.string().optional(),
    latencyMs: z.number().int().nonnegative(),
    /**
     * The API version the request was read and answered in (docs/guide/versioning.md);
     * absent for requests logged before versions existed.
     */
    apiVersion: z.string().optional(),
  })
  .meta({ id: 'RequestLogEntry', examples: [requestLogEntryExample] });
export type RequestLogEntry = z.infer<typeof requestLogEntry>;

export const requestLogPage = z
  .object({
    requests: z.array(requestLogEntry).max(MAX_REQUEST_LOG_PAGE),
    /** Absent on the last page; otherwise send it as `before` for the next one. */
    nextCursor: z.string().optional(),
  })
  .meta({
    id: 'RequestLogPage',
    examples: [{ requests: [requestLogEntryExample], nextCursor: 'MTc5NTM3MDcwMDEyM3w0Mg' }],
  });
export type RequestLogPage = z.infer<typeof requestLogPage>;

/** The most error codes `GET …/requests/errors` lists. */
export const MAX_REQUEST_ERROR_GROUPS = 100;

/** `GET /v1/{commerce|marketfront}/requests/errors`: the last 24 hours' errors by code. */
export const requestErrorGroups = z
  .object({
    /** The groups count the errors answered since this instant. */
    since: dateTime,
    groups: z
      .array(
        z.object({
          errorCode: z.string(),
          /** The status of the latest answer with this code. */
          status: z.number().int(),
          count: z.number().int().positive(),
          lastAt: dateTime,
          lastRequestId: z.string(),
          /** The code's page: the ProblemDetail `type`. */
          docsUrl: z.string(),
        }),
      )
      .max(MAX_REQUEST_ERROR_GROUPS),
  })
  .meta({
    id: 'RequestErrorGroups',
    examples: [
      {
        since: '2026-11-21T18:05:00.000Z',
        groups: [
          {
            errorCode: 'STORE_NOT_FOUND',
            status: 404,
            count: 3,
            lastAt: '2026-11-22T18:05:00.123Z',
            lastRequestId: '3b9f6a0e-2d1c-4c8e-9a7f-5e4d3c2b1a09',
            docsUrl: 'https://api.example.com/docs/errors/STORE_NOT_FOUND',
          },
        ],
      },
    ],
  });
export type RequestErrorGroups = z.infer<typeof requestErrorGroups>;

/** The most keys `GET …/keys` lists (newest first). */
export const MAX_LISTED_API_KEYS = 100;

/** `GET /v1/{commerce|marketfront}/keys`: the partner's keys of the caller's mode. */
export const apiKeyList = z
  .object({
    keys: z
      .array(
        z.object({
          /** The public part of the key (printed in it); never the secret. */
          keyId: z.string(),
          mode: partnerMode,
          createdAt: dateTime,
          /** When a request last used it (to the minute); absent while never used. */
          lastUsedAt: dateTime.optional(),
          revokedAt: dateTime.optional(),
        }),
      )
      .max(MAX_LISTED_API_KEYS),
  })
  .meta({
    id: 'ApiKeyList',
    examples: [
      {
        keys: [
          {
            keyId: '3f9c0a1b2d4e5f67',
            mode: 'live',
            createdAt: '2026-11-01T09:00:00.000Z',
            lastUsedAt: '2026-11-22T18:05:00.000Z',
          },
        ],
      },
    ],
  });
export type ApiKeyList = z.infer<typeof apiKeyList>;

/** A rate-limit budget (docs/guide/requests.md#rate-limit-usage). */
export const rateLimitBucket = z.enum(['reads', 'writes', 'discovery']);
export type RateLimitBucket = z.infer<typeof rateLimitBucket>;

/** `GET /v1/{commerce|marketfront}/rate-limits`: each budget's current one-minute window. */
export const rateLimitUsage = z
  .object({
    limits: z.array(
      z.object({
        bucket: rateLimitBucket,
        limitPerMinute: z.number().int().positive(),
        /** Requests counted in the current window, refused ones included. */
        used: z.number().int().nonnegative(),
        remaining: z.number().int().nonnegative(),
        /** When the current window ends; now when none is open (the whole budget is left). */
        resetsAt: dateTime,
      }),
    ),
  })
  .meta({
    id: 'RateLimitUsage',
    examples: [
      {
        limits: [
          {
            bucket: 'reads',
            limitPerMinute: 1000,
            used: 12,
            remaining: 988,
            resetsAt: '2026-11-22T18:06:00.000Z',
          },
          {
            bucket: 'writes',
            limitPerMinute: 100,
            used: 0,
            remaining: 100,
            resetsAt: '2026-11-22T18:05:00.000Z',
          },
        ],
      },
    ],
  });
export type RateLimitUsage = z.infer<typeof rateLimitUsage>;
