import {
  API_VERSIONS,
  LATEST_API_VERSION,
  isApiVersion,
  operationExistsIn,
  problemDown,
  requestUpSteps,
  responseDown,
  translatesOperation,
  type ApiVersion,
  type ProblemDetail,
} from '@pcp/contracts';
import { AppError, parseJsonBytes } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { z } from 'zod';
import { PROBLEM_CONTENT_TYPE, unknownRoute } from '../http/problem.js';
import { zodValidatorCompiler } from '../http/validation.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The API version the request is read and answered in (docs/guide/versioning.md): its
     * PCP-Version header, else its partner's pin, else the newest.
     */
    apiVersion: ApiVersion;
  }
}

/** The response header every answer carries, and the request header that picks a version. */
const API_VERSION_HEADER = 'pcp-version';

/** The version a PCP-Version header names: undefined when absent, null when not a version. */
function versionOfHeader(value: string | string[] | undefined): ApiVersion | null | undefined {
  if (value === undefined) return undefined;
  // Node joins repeated headers with ", ": two values are no version, like any other text.
  return isApiVersion(value) ? value : null;
}

const invalidVersion = () =>
  new AppError(
    'API_VERSION_INVALID',
    `PCP-Version must be one of the API versions: ${API_VERSIONS.join(', ')}`,
  );

/**
 * The header's version, first of all hooks, so even an answer refused before authentication is
 * written in (and says) the version asked for when it is one; the newest otherwise.
 */
const apiVersionHeader: FastifyPluginAsync = async (app) => {
  app.decorateRequest('apiVersion', LATEST_API_VERSION);
  app.addHook('onRequest', (request, reply, done) => {
    const named = versionOfHeader(request.headers[API_VERSION_HEADER]);
    if (named) request.apiVersion = named;
    reply.header(API_VERSION_HEADER, request.apiVersion);
    done();
  });
};

const operationOf = (request: FastifyRequest): string | undefined =>
  request.routeOptions.schema?.operationId;

/** Body validators of the older versions' request schemas, compiled once each. */
const olderBodyValidators = new WeakMap<z.ZodType, ReturnType<typeof zodValidatorCompiler>>();
function olderBodyValidator(schema: z.ZodType) {
  let validate = olderBodyValidators.get(schema);
  if (!validate) {
    validate = zodValidatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' });
    olderBodyValidators.set(schema, validate);
  }
  return validate;
}

const isJson = (contentType: unknown) =>
  typeof contentType === 'string' &&
  (contentType.startsWith('application/json') || contentType.startsWith(PROBLEM_CONTENT_TYPE));

/** The body of a request of an older version, checked as that version did and brought up. */
function bringRequestUp(request: FastifyRequest): void {
  const operationId = operationOf(request);
  if (!operationId) return;
  const steps = requestUpSteps(request.apiVersion, operationId);
  if (steps.length === 0 || request.body === undefined) return;
  const raw = Buffer.isBuffer(request.body);
  let body: unknown;
  try {
    body = raw ? parseJsonBytes(request.body as Buffer) : request.body;
  } catch {
    // Not JSON: the route refuses it as in any version (the service, for forwarded bodies).
    return;
  }
  for (const step of steps) {
    if (step.schema) {
      // The compiler above is synchronous and answers { value } or { error: AppError }.
      const { error } = olderBodyValidator(step.schema)(body) as { error?: AppError };
      if (error) throw error;
    }
    if (step.up) body = step.up(body);
  }
  request.body = raw ? Buffer.from(JSON.stringify(body)) : body;
}

/** The JSON answer to a request of an older version, brought down to it. */
function bringAnswerDown(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  const contentType = reply.getHeader('content-type');
  if (!isJson(contentType)) return payload;
  const version = request.apiVersion;
  const operationId = operationOf(request);
  const problem = String(contentType).startsWith(PROBLEM_CONTENT_TYPE);
  if (!problem && !(operationId && translatesOperation(version, operationId))) return payload;
  if (!problem && (reply.statusCode < 200 || reply.statusCode >= 300)) return payload;
  const body: unknown = JSON.parse(payload.toString());
  const older = problem
    ? problemDown(version, operationId, body as ProblemDetail)
    : responseDown(version, operationId as string, body);
  return JSON.stringify(older);
}

/**
 * After authentication and the rate limit: a malformed PCP-Version is 400 API_VERSION_INVALID;
 * without the header the partner's pin applies; an operation the version lacks answers as an
 * unknown route. Requests of an older version are brought up to the newest before their
 * handler and their JSON answers brought down (contract §14). Callback hooks, each leaving at
 * once for the newest version: its requests take no promise, parse or copy more, and their
 * forwarded bytes go out untouched.
 */
const apiVersion: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    const named = versionOfHeader(request.headers[API_VERSION_HEADER]);
    if (named === null) {
      done(invalidVersion());
      return;
    }
    if (named === undefined && request.principal?.apiVersion) {
      request.apiVersion = request.principal.apiVersion;
      reply.header(API_VERSION_HEADER, request.apiVersion);
    }
    const operationId =
      request.apiVersion === LATEST_API_VERSION ? undefined : operationOf(request);
    if (operationId && !operationExistsIn(request.apiVersion, operationId)) {
      done(unknownRoute(request));
      return;
    }
    done();
  });

  app.addHook('preValidation', (request, _reply, done) => {
    if (request.apiVersion === LATEST_API_VERSION) {
      done();
      return;
    }
    try {
      bringRequestUp(request);
      done();
    } catch (error) {
      done(error as Error);
    }
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.apiVersion === LATEST_API_VERSION) {
      done(null, payload);
      return;
    }
    try {
      done(null, bringAnswerDown(request, reply, payload));
    } catch (error) {
      done(error as Error);
    }
  });
};

export const apiVersionHeaderPlugin = fp(apiVersionHeader, { name: 'api-version-header' });
export default fp(apiVersion, {
  name: 'api-version',
  dependencies: ['auth', 'rate-limit', 'api-version-header'],
});
