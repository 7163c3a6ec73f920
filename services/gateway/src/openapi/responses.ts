import { errorCodes, problemDetail, type ErrorCode } from '@pcp/contracts';
import type { z } from 'zod';
import { PROBLEM_CONTENT_TYPE } from '../http/problem.js';
import type { ResponseHeaderName } from './headers.js';

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
