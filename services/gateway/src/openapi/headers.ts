/**
 * The HTTP headers of the API, each described once. The document applies them by rule
 * (`route-transform.ts`): from a route's config (rate class, end user, idempotency key),
 * from the codes of its ProblemDetail responses, or as a route's responses declare them.
 * Each entry is the JSON Schema of the header's value with its description, as
 * @fastify/swagger turns it into a parameter or a response header.
 */

interface HeaderSchema {
  readonly type: 'string' | 'integer';
  readonly description: string;
  readonly examples: readonly (string | number)[];
  readonly pattern?: string;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly enum?: readonly string[];
}

/** Request headers the platform reads besides Authorization (the security scheme). */
export const requestHeaders = {
  'Idempotency-Key': {
    type: 'string',
    description:
      'Identifies one order attempt: a fresh UUID v4 per attempt, 1 to 255 visible ASCII ' +
      'characters. Resend the same key (and the same body) to retry an attempt: its recorded ' +
      'outcome is replayed for 24 hours and the card is never charged twice. Without it the ' +
      'answer is 400 MISSING_IDEMPOTENCY_KEY.',
    pattern: '^[!-~]{1,255}$',
    examples: ['6f1c1c52-8d3e-4a4e-9d2b-3f4c8a7e5b10'],
  },
  'X-End-User-Id': {
    type: 'string',
    description:
      'Your opaque id of the end user the request acts for, 1 to 128 printable ASCII ' +
      'characters. Saved addresses and vaulted cards belong to (your partner, this end user). ' +
      'A malformed value is 400 REQUEST_INVALID on any route.',
    pattern: '^[ -~]{1,128}$',
    examples: ['customer-4821'],
  },
  'X-Request-Id': {
    type: 'string',
    description:
      'Your correlation id for the request: any value; its first 128 characters come back as ' +
      'clientRequestId in your request log. The request’s own id (the X-Request-Id response ' +
      'header, every ProblemDetail requestId) is the platform’s: yours only when it is an id ' +
      'the platform issued (a lowercase UUID), otherwise a new one.',
    examples: ['3b9f6a0e-2d1c-4c8e-9a7f-5e4d3c2b1a09'],
  },
  'PCP-Version': {
    type: 'string',
    description:
      'The API version to read and answer this request in (docs/guide/versioning.md), one of ' +
      'the changelog’s dates; without it, your pinned version. Anything else is 400 ' +
      'API_VERSION_INVALID.',
    pattern: '^\\d{4}-\\d{2}-\\d{2}$',
    examples: ['2026-12-01'],
  },
  'If-None-Match': {
    type: 'string',
    description:
      'The ETag of the CatalogSet you hold: while it is still the active one the answer is ' +
      '304 Not Modified without a body.',
    maxLength: 512,
    examples: ['"q1x2X0rJ3tqJm2cF7r8bq5bqk0zv3rJ4b6YQk9w8c1E"'],
  },
} as const satisfies Record<string, HeaderSchema>;
export type RequestHeaderName = keyof typeof requestHeaders;

/** Response headers, each sent where the document says. */
export const responseHeaders = {
  'PCP-Version': {
    type: 'string',
    description:
      'The API version this answer was written in: your PCP-Version header’s, else your ' +
      'pinned version (docs/guide/versioning.md).',
    pattern: '^\\d{4}-\\d{2}-\\d{2}$',
    examples: ['2026-12-01'],
  },
  'X-Request-Id': {
    type: 'string',
    description:
      'The id of this request, always one the platform issued (a lowercase UUID); quote it to ' +
      'support.',
    examples: ['3b9f6a0e-2d1c-4c8e-9a7f-5e4d3c2b1a09'],
  },
  'X-RateLimit-Limit': {
    type: 'integer',
    description:
      "Requests per minute your partner may make in this route's class (reads, writes or " +
      'discovery).',
    minimum: 0,
    examples: [1000],
  },
  'X-RateLimit-Remaining': {
    type: 'integer',
    description: 'Requests left in the current one-minute window of this class.',
    minimum: 0,
    examples: [998],
  },
  'X-RateLimit-Reset': {
    type: 'integer',
    description: 'Seconds until the current window ends and the budget is full again.',
    minimum: 0,
    examples: [42],
  },
  'Retry-After': {
    type: 'integer',
    description:
      'Seconds to wait before the next call (RFC 9110): honour it before polling again or ' +
      'retrying.',
    minimum: 1,
    examples: [2],
  },
  Location: {
    type: 'string',
    description: 'The path of the resource this call created or started.',
    examples: ['/v1/marketfront/orders/0b9d7e4c-6a2f-4f1e-8c3d-2a1b0c9d8e7f'],
  },
  'Idempotent-Replayed': {
    type: 'string',
    description:
      'Present, with the value true, when this answer is the outcome recorded for the ' +
      'Idempotency-Key, replayed byte for byte; never sent with false, so test for presence. ' +
      "A replayed ProblemDetail's requestId and timestamp are the first answer's; the " +
      'X-Request-Id header is this request’s.',
    enum: ['true'],
    examples: ['true'],
  },
  ETag: {
    type: 'string',
    description: 'The version of the CatalogSet: send it back as If-None-Match.',
    examples: ['"q1x2X0rJ3tqJm2cF7r8bq5bqk0zv3rJ4b6YQk9w8c1E"'],
  },
  'WWW-Authenticate': {
    type: 'string',
    description: 'The authentication scheme to use: an API key as Authorization: Bearer <key>.',
    enum: ['Bearer'],
    examples: ['Bearer'],
  },
  'Set-Cookie': {
    type: 'string',
    description:
      'The console session cookie, __Host-pcp_session (HttpOnly; Secure; SameSite=Strict; ' +
      'Path=/; Max-Age: the seconds left of the session), or its removal (Max-Age=0) on ' +
      'sign-out. Browsers keep and send it; scripts cannot read it.',
    examples: ['__Host-pcp_session=9sV…; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=43200'],
  },
} as const satisfies Record<string, HeaderSchema>;
export type ResponseHeaderName = keyof typeof responseHeaders;

/** The X-RateLimit-* headers every response of a rate-limited route carries. */
export const rateLimitHeaders = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
] as const satisfies readonly ResponseHeaderName[];
