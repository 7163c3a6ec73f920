import { errorCodes, problemDetail, type ErrorCode, type SubjectDefinition } from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { RateClass } from '../db/partner.table.js';
import { PROBLEM_CONTENT_TYPE } from '../http/problem.js';
import type { ResponseHeaderName } from '../openapi/headers.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which kind of partner may call the route; absent for public routes (health, docs). */
    area?: 'commerce' | 'distribution';
    rateClass?: RateClass;
    /**
     * `required`: the route acts for an end user; without X-End-User-Id it is 401
     * SESSION_USER_REQUIRED. `optional`: the route acts for one when the request needs it
     * (validate with a saved addressId); the document shows the header as optional.
     */
    endUser?: 'required' | 'optional';
    /**
     * The route takes an Idempotency-Key (place, contract §8), which its handler checks: the
     * document shows the header as required, the idempotency codes and Idempotent-Replayed.
     */
    idempotencyKey?: 'required';
  }
}

/** A ProblemDetail response of a route: the codes it answers with at one status. */
export interface ProblemResponse {
  readonly content: { readonly [PROBLEM_CONTENT_TYPE]: { readonly schema: typeof problemDetail } };
  /** Documentation: the codes this route answers with at this status. */
  readonly errorCodes: readonly ErrorCode[];
  /** Documentation: which requests get this status with no body at all (`problemOrNoBody`). */
  readonly noBodyWhen?: string;
}

/**
 * The ProblemDetail responses a route declares, from the error codes its handler and
 * service answer (each at its status in the errorCodes table). The codes every route of its
 * kind can answer (authentication, rate limits, bodies, the end user, unavailable services)
 * are added to the document by rule, from the route's config.
 */
export function problemResponses(...codes: readonly ErrorCode[]): Record<number, ProblemResponse> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = errorCodes[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, statusCodes]) => [
      status,
      { content: { [PROBLEM_CONTENT_TYPE]: { schema: problemDetail } }, errorCodes: statusCodes },
    ]),
  );
}

/**
 * `code`'s ProblemDetail response, at a status that some requests get with no body at all
 * (the spec's 404 for a malformed store id); `noBodyWhen` names them. The document gives
 * that status no content: a validating proxy (Prism) matches a declared content's media type
 * against every answer, and a bodiless answer has none. Its description says when the body
 * is a ProblemDetail and when it is absent.
 */
export function problemOrNoBody(
  code: ErrorCode,
  noBodyWhen: string,
): Record<number, ProblemResponse> {
  return Object.fromEntries(
    Object.entries(problemResponses(code)).map(([status, response]) => [
      status,
      { ...response, noBodyWhen },
    ]),
  );
}

/** A JSON success response as documented: its body, what it means and the headers it adds. */
export interface JsonResponse<S extends z.ZodType> {
  readonly description: string;
  readonly content: { readonly 'application/json': { readonly schema: S } };
  /** Documentation: headers the handler sets beyond those every response of the route has. */
  readonly headers: readonly ResponseHeaderName[];
}

export function jsonResponse<S extends z.ZodType>(
  schema: S,
  description: string,
  headers: readonly ResponseHeaderName[] = [],
): JsonResponse<S> {
  return { description, content: { 'application/json': { schema } }, headers };
}

/** A response without a body (304), as documented. */
export interface EmptyResponse {
  readonly description: string;
  readonly headers: readonly ResponseHeaderName[];
}

export function emptyResponse(
  description: string,
  headers: readonly ResponseHeaderName[] = [],
): EmptyResponse {
  return { description, headers };
}

/**
 * Send a service's result bytes as the response body, unparsed (the service's handler is
 * typed by the same contract the route documents).
 */
export function forwardJson(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(body);
}

/**
 * Register routes whose JSON body goes to a service unchanged (the NATS payload is the
 * body): in their scope an application/json body stays the bytes that arrived, and the
 * service parses it by the same rules as Fastify (`parseJsonBytes`: forbidden keys, empty
 * and invalid JSON answer the same ProblemDetail) and validates it against the contract the
 * route documents, with the same pointers. Parsing and validating here too, then
 * serializing again for NATS, would triple the work on the busiest routes.
 */
export function registerForwardingRoutes(
  app: FastifyInstance,
  register: (scope: FastifyInstance) => void,
): void {
  void app.register((scope, _options, done) => {
    scope.removeContentTypeParser('application/json');
    // The service reads JSON only: another type is refused here (415), not forwarded empty.
    scope.removeContentTypeParser('text/plain');
    scope.addContentTypeParser(
      'application/json',
      { parseAs: 'buffer' },
      (_request, body, parsed) => {
        parsed(null, body);
      },
    );
    scope.setValidatorCompiler(() => (value: unknown) => ({ value }));
    register(scope);
    done();
  });
}

/**
 * The handler of a route registered by `registerForwardingRoutes`: the unparsed body goes
 * to `definition`'s service and its result bytes come back as they are.
 */
export function forwardBody(
  bus: BusClient,
  definition: SubjectDefinition<z.ZodType, z.ZodType>,
  contextOf: (request: FastifyRequest) => RequestContext,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // A request without a body (and so without a content type) has none to forward.
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    return forwardJson(reply, await bus.requestRaw(definition, body, contextOf(request)));
  };
}
