import type { SwaggerTransform } from '@fastify/swagger';
import { errorCodes, problemDetail, type ErrorCode } from '@pcp/contracts';
import type { FastifyContextConfig, FastifySchema } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { errorDocUrl, problemExample } from '../docs/error-pages.js';
import { PROBLEM_CONTENT_TYPE } from '../http/problem.js';
import {
  rateLimitHeaders,
  requestHeaders,
  responseHeaders,
  type RequestHeaderName,
  type ResponseHeaderName,
} from './headers.js';
import { SANDBOX_TAG, TEST_ONLY_EXTENSION } from './test-only.js';
import type { EmptyResponse, JsonResponse, ProblemResponse } from './responses.js';

/** What a route declares at one status (responses.ts's helpers, or a bare zod schema). */
type DeclaredResponse = z.ZodType | ProblemResponse | JsonResponse<z.ZodType> | EmptyResponse;

/** A JSON Schema object as the zod transform renders it and @fastify/swagger reads it. */
type JsonObject = Record<string, unknown>;

/** The codes every authenticated route can answer, whatever it does. */
const authenticatedRouteCodes: readonly ErrorCode[] = [
  'UNAUTHORIZED', // no, a malformed or an unknown key
  'FORBIDDEN', // a key of the other kind of partner, or a live key on a test-only route
  'CSRF_REJECTED', // a console session's write without its X-CSRF-Token, or from another site
  'REQUEST_INVALID', // a malformed X-End-User-Id, parameter or body
  'API_VERSION_INVALID', // a PCP-Version header that names no API version
  'RATE_LIMITED', // the partner's budget, or an address failing authentication
  'INTERNAL',
  'SERVICE_UNAVAILABLE', // key lookup or the service behind the route unavailable
  'UPSTREAM_TIMEOUT', // the service behind the route did not answer in time
];
const bodyCodes: readonly ErrorCode[] = ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];
const idempotencyCodes: readonly ErrorCode[] = [
  'MISSING_IDEMPOTENCY_KEY',
  'IDEMPOTENCY_KEY_IN_PROGRESS',
  'IDEMPOTENCY_KEY_CONFLICT',
];
/**
 * Statuses of the final outcomes recorded against an Idempotency-Key
 * (docs/guide/orders.md#idempotency).
 */
const recordedFailureStatuses = new Set([400, 403, 404]);
/** Retryable answers at these statuses tell when to retry (409 in progress, 429, 503). */
const retryAfterStatuses = new Set([409, 429, 503]);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const codeOrder = new Map(Object.keys(errorCodes).map((code, index) => [code, index]));

/** Routes that need a key or a console session. */
function isAuthenticated(config: FastifyContextConfig): boolean {
  return config.area !== undefined || config.testOnly === true || config.session === 'current';
}

/**
 * Who may call a route: its partner's key, or a console session of that partner, whose
 * writes need its CSRF token too (docs/guide/authentication.md#console-sessions).
 */
function securityOf(takesWrites: boolean): Record<string, string[]>[] {
  const session: Record<string, string[]> = takesWrites
    ? { cookieAuth: [], csrfToken: [] }
    : { cookieAuth: [] };
  return [{ bearerAuth: [] }, session];
}

function isZodSchema(value: unknown): value is z.ZodType {
  return value instanceof z.ZodType;
}

function isProblemResponse(value: DeclaredResponse): value is ProblemResponse {
  return !isZodSchema(value) && 'errorCodes' in value;
}

function methodsOf(method: string | readonly string[]): string[] {
  return (typeof method === 'string' ? [method] : [...method]).map((name) => name.toUpperCase());
}

/** The codes of each ProblemDetail status: the route's own and those its config implies. */
function problemCodesOf(
  declared: Record<string, DeclaredResponse>,
  config: FastifyContextConfig,
  takesBody: boolean,
): Map<number, ErrorCode[]> {
  const codes: ErrorCode[] = Object.values(declared).flatMap((response) =>
    isProblemResponse(response) ? response.errorCodes : [],
  );
  if (isAuthenticated(config)) codes.push(...authenticatedRouteCodes);
  if (config.endUser) codes.push('SESSION_USER_REQUIRED');
  if (takesBody) codes.push(...bodyCodes);
  if (config.idempotencyKey) codes.push(...idempotencyCodes);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const { status } = errorCodes[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const statusCodes of byStatus.values()) {
    statusCodes.sort((a, b) => (codeOrder.get(a) ?? 0) - (codeOrder.get(b) ?? 0));
  }
  return byStatus;
}

function problemDescription(
  status: number,
  codes: readonly ErrorCode[],
  docsUrl: string,
  noBodyWhen: string | undefined,
) {
  const list = codes
    .map((code) => `- [\`${code}\`](${errorDocUrl(docsUrl, code)}): ${errorCodes[code].title}`)
    .join('\n');
  const reason = STATUS_CODES[status] ?? 'Error';
  if (noBodyWhen === undefined) {
    return `${reason}: a ProblemDetail whose errorCode is one of\n\n${list}`;
  }
  return (
    `${reason}: a ProblemDetail (${PROBLEM_CONTENT_TYPE}, the ProblemDetail schema) whose ` +
    `errorCode is one of\n\n${list}\n\nor no body at all, without a Content-Type, ` +
    `${noBodyWhen}. Either may come, so no content is declared.`
  );
}

function responseHeadersOf(
  status: number,
  config: FastifyContextConfig,
  problemCodes: readonly ErrorCode[],
  declared: readonly ResponseHeaderName[],
): JsonObject {
  const names: ResponseHeaderName[] = ['X-Request-Id', 'PCP-Version'];
  if (config.rateClass) names.push(...rateLimitHeaders);
  if (status === 401) names.push('WWW-Authenticate');
  if (retryAfterStatuses.has(status) && problemCodes.some((code) => errorCodes[code].retryable)) {
    names.push('Retry-After');
  }
  const succeeded = status >= 200 && status < 300;
  if (config.idempotencyKey && (succeeded || recordedFailureStatuses.has(status))) {
    names.push('Idempotent-Replayed');
  }
  names.push(...declared);
  return Object.fromEntries([...new Set(names)].map((name) => [name, responseHeaders[name]]));
}

/**
 * The request headers of a route: those its schema validates, under their canonical names
 * and descriptions, and those the gateway or handler reads by rule (documentation only:
 * nothing here validates a request).
 */
function requestHeadersOf(rendered: unknown, config: FastifyContextConfig): JsonObject {
  const schema = (rendered ?? {}) as { properties?: JsonObject; required?: string[] };
  const canonical = new Map(
    Object.keys(requestHeaders).map((name) => [name.toLowerCase(), name as RequestHeaderName]),
  );
  const properties: JsonObject = {};
  const required = new Set<string>();
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const known = canonical.get(name.toLowerCase());
    const documented = known ?? name;
    // The route's own schema is what the gateway enforces: its constraints win.
    properties[documented] = known
      ? { ...requestHeaders[known], ...(property as JsonObject) }
      : property;
    if (schema.required?.includes(name)) required.add(documented);
  }
  const add = (name: RequestHeaderName, isRequired: boolean) => {
    properties[name] = requestHeaders[name];
    if (isRequired) required.add(name);
  };
  if (config.idempotencyKey) add('Idempotency-Key', true);
  if (config.endUser) add('X-End-User-Id', config.endUser === 'required');
  if (isAuthenticated(config)) {
    add('X-Request-Id', false);
    add('PCP-Version', false);
  }
  return { type: 'object', properties, required: [...required] };
}

/**
 * The route transform of the document: fastify-type-provider-zod's (zod schemas → JSON
 * Schema, shared schemas → component references), then what the document says of every
 * route by rule, from its config and its declared responses: the ProblemDetail responses
 * with each code's link and example, the response headers and the request headers, and the
 * Sandbox tag and `x-pcp-test-only` of a route only test keys may call.
 */
export function createRouteTransform(options: { docsUrl: string }): SwaggerTransform {
  return (input) => {
    const schema = input.schema as (FastifySchema & { hide?: boolean }) | undefined;
    if (!schema || schema.hide) return jsonSchemaTransform(input);
    const config: FastifyContextConfig = input.route.config ?? {};
    const declared = (schema.response ?? {}) as Record<string, DeclaredResponse>;
    const takesBody = methodsOf(input.route.method).some((method) =>
      ['POST', 'PUT', 'PATCH'].includes(method),
    );
    const problems = problemCodesOf(declared, config, takesBody);

    // What the zod transform understands: zod schemas, or content maps of them.
    const forZod: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(declared)) {
      if (isZodSchema(response)) forZod[status] = response;
      else if ('content' in response) forZod[status] = { content: response.content };
      else forZod[status] = z.null();
    }
    for (const status of problems.keys()) {
      forZod[status] = { content: { [PROBLEM_CONTENT_TYPE]: { schema: problemDetail } } };
    }
    const transformed = jsonSchemaTransform({
      ...input,
      schema: { ...schema, response: forZod },
    });

    const rendered = transformed.schema.response as Record<string, JsonObject>;
    for (const [status, response] of Object.entries(rendered)) {
      const code = Number(status);
      const own = declared[status];
      const problemCodes = problems.get(code) ?? [];
      const documented = own && !isZodSchema(own) && 'headers' in own ? own : undefined;
      const noBodyWhen = own && isProblemResponse(own) ? own.noBodyWhen : undefined;
      response.headers = responseHeadersOf(code, config, problemCodes, documented?.headers ?? []);
      if (problemCodes.length > 0) {
        response.description = problemDescription(code, problemCodes, options.docsUrl, noBodyWhen);
        if (noBodyWhen === undefined) {
          const media = (response.content as Record<string, JsonObject>)[PROBLEM_CONTENT_TYPE]!;
          media.examples = Object.fromEntries(
            problemCodes.map((problemCode) => [
              problemCode,
              {
                summary: errorCodes[problemCode].title,
                value: problemExample(problemCode, options.docsUrl),
              },
            ]),
          );
        } else {
          // Some answers of this status have no body (see problemOrNoBody); @fastify/swagger
          // declares no content for a response whose schema is null.
          delete response.content;
          response.type = 'null';
        }
      } else if (documented) {
        response['x-response-description'] = documented.description;
      } else if (response.description === undefined) {
        // A bare schema: the status's reason phrase rather than @fastify/swagger's
        // "Default Response".
        response['x-response-description'] = STATUS_CODES[code] ?? 'Response';
      }
    }
    transformed.schema.headers = requestHeadersOf(transformed.schema.headers, config);
    if (config.area !== undefined && schema.security === undefined) {
      const writes = methodsOf(input.route.method).some((method) => !SAFE_METHODS.has(method));
      transformed.schema.security = securityOf(writes);
    }
    if (config.testOnly) {
      const operation = transformed.schema as FastifySchema & Record<string, unknown>;
      operation.tags = [...new Set([...(operation.tags ?? []), SANDBOX_TAG])];
      operation[TEST_ONLY_EXTENSION] = true;
    }
    return transformed;
  };
}
