import { z } from 'zod';
import { maxProblemErrors, orderError } from './common.js';

/**
 * A request/reply subject: its name (below the deployment's subject prefix) and the zod
 * schemas of both ends. Callers and handlers validate against the same definition.
 */
export interface SubjectDefinition<Req extends z.ZodType, Rep extends z.ZodType> {
  readonly name: string;
  readonly service: ServiceName;
  readonly request: Req;
  readonly reply: Rep;
}

export const serviceNames = ['stores', 'catalog', 'ordering', 'payments'] as const;
export type ServiceName = (typeof serviceNames)[number];

export function defineSubject<Req extends z.ZodType, Rep extends z.ZodType>(
  service: ServiceName,
  name: string,
  request: Req,
  reply: Rep,
): SubjectDefinition<Req, Rep> {
  return { service, name: `${service}.${name}`, request, reply };
}

export type RequestOf<S> = S extends SubjectDefinition<infer Req, z.ZodType> ? z.input<Req> : never;
export type ReplyOf<S> = S extends SubjectDefinition<z.ZodType, infer Rep> ? z.output<Rep> : never;

/** Message headers that carry the caller's context across NATS. */
export const contextHeaders = {
  requestId: 'X-Request-Id',
  partnerId: 'Pcp-Partner-Id',
  partnerKind: 'Pcp-Partner-Kind',
  /** `live` or `test` (docs/guide/sandbox.md): the mode of the key the request came with. */
  mode: 'Pcp-Mode',
  endUserId: 'Pcp-End-User-Id',
  /** The partner's allowed payment types, comma-separated (set by the admin command). */
  paymentTypes: 'Pcp-Payment-Types',
  /** Place's Idempotency-Key (docs/guide/orders.md#idempotency), as the partner sent it. */
  idempotencyKey: 'Idempotency-Key',
  /**
   * The API version the request was made in (docs/guide/versioning.md), sent only when it is not
   * the newest: absent (the newest's requests, an older gateway, the platform's own calls) is
   * the newest.
   */
  apiVersion: 'Pcp-Api-Version',
  deadline: 'Pcp-Deadline',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
} as const;

/** The typed error half of a reply; the gateway maps it to ProblemDetail via `errorCodes`. */
export const serviceError = z.object({
  errorCode: z.string(),
  detail: z.string(),
  errors: z.array(orderError).max(maxProblemErrors).optional(),
  /** How many element errors were left out of `errors` (it holds at most 100). */
  errorsOmitted: z.number().int().positive().optional(),
  retryAfterSeconds: z.number().int().positive().optional(),
});
export type ServiceError = z.infer<typeof serviceError>;

/**
 * Every reply says in this header whether its body is the result (`ok`, the reply schema's
 * JSON) or a `serviceError` (`error`). The result is plain JSON, so the gateway can pass
 * it to HTTP without parsing it again.
 */
export const replyStatusHeader = 'Pcp-Reply';

/**
 * A reply larger than one NATS message travels as its first message, carrying this header
 * with the number of messages, followed by the rest in order.
 */
export const replyPartsHeader = 'Pcp-Parts';

/** On a reply's first part: the length in bytes of the whole reply, checked by the caller. */
export const replyLengthHeader = 'Pcp-Length';

/** The reply schema of a subject answered with bytes rather than JSON (`handleBytes`). */
export const bytesReply = z.instanceof(Uint8Array);

/** Readiness probe every service answers under its own name. */
export const healthReply = z.object({ service: z.string(), status: z.literal('ok') });
export function healthSubject(
  service: ServiceName,
): SubjectDefinition<z.ZodObject, typeof healthReply> {
  return defineSubject(service, 'v1.health', z.object({}), healthReply);
}
