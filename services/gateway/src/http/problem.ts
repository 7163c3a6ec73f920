import {
  LATEST_API_VERSION,
  type ErrorCode,
  type ProblemDetail,
  type RecordedPlaceProblem,
} from '@pcp/contracts';
import { AppError, isForbiddenKeyError, jsonBodyProblems, type Logger } from '@pcp/service-kit';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

declare module 'fastify' {
  interface FastifyReply {
    /** The errorCode of the ProblemDetail sent, if one was: what the request log keeps. */
    errorCode: ErrorCode | undefined;
  }
}

/**
 * A failure recorded against an Idempotency-Key (docs/guide/orders.md#idempotency): it renders with
 * the request id and time it was first answered at, so every replay is the same bytes.
 */
export class RecordedProblem extends AppError {
  constructor(
    recorded: RecordedPlaceProblem,
    readonly replayed: boolean,
  ) {
    super(recorded.errorCode as ErrorCode, recorded.detail, {
      ...(recorded.errors ? { errors: recorded.errors } : {}),
      ...(recorded.errorsOmitted ? { errorsOmitted: recorded.errorsOmitted } : {}),
    });
    this.requestId = recorded.requestId;
    this.timestamp = recorded.timestamp;
  }

  readonly requestId: string;
  readonly timestamp: string;
}

/**
 * Build the RFC 9457 body for `error` as it answers `request` (docs/guide/errors.md#problemdetail).
 */
export function problemFor(
  request: FastifyRequest,
  error: AppError,
  docsUrl: string,
): ProblemDetail {
  const recorded = error instanceof RecordedProblem ? error : undefined;
  return {
    type: `${docsUrl}/errors/${error.code}`,
    title: error.info.title,
    status: error.info.status,
    detail: error.message,
    instance: request.url.split('?')[0] ?? '/',
    requestId: recorded?.requestId ?? request.id,
    timestamp: recorded?.timestamp ?? new Date().toISOString(),
    errorCode: error.code,
    errorCategory: error.info.category,
    retryable: error.info.retryable,
    ...(error.errors ? { errors: error.errors } : {}),
    ...(error.errorsOmitted > 0 ? { errorsOmitted: error.errorsOmitted } : {}),
  };
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  error: AppError,
  docsUrl: string,
): FastifyReply {
  if (error.info.status === 401) reply.header('www-authenticate', 'Bearer');
  if (error.retryAfterSeconds) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error instanceof RecordedProblem && error.replayed)
    reply.header('idempotent-replayed', 'true');
  reply.errorCode = error.code;
  return reply
    .code(error.info.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify(problemFor(request, error, docsUrl)));
}

/** Fastify's own errors (parsing, limits, media type) as platform errors. */
function fromFastifyError(error: FastifyError): AppError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'PAYLOAD_TOO_LARGE',
        'The request body is larger than this endpoint accepts',
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('REQUEST_INVALID', jsonBodyProblems.empty);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('REQUEST_INVALID', 'Content-Length does not match the body');
    default:
      break;
  }
  // secure-json-parse refuses __proto__ and constructor.prototype keys (with a SyntaxError).
  if (isForbiddenKeyError(error)) {
    return new AppError('REQUEST_INVALID', jsonBodyProblems.forbiddenKey);
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new AppError('REQUEST_INVALID', jsonBodyProblems.invalid);
  }
  const status = error.statusCode ?? 500;
  if (status === 404) return new AppError('NOT_FOUND', 'Not found');
  if (status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'The request is too large');
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type');
  if (status >= 400 && status < 500)
    return new AppError('REQUEST_INVALID', 'The request is malformed');
  return undefined;
}

/**
 * The one error handler, registered at the root: every error leaves as ProblemDetail and a
 * 5xx never carries internal detail.
 */
export function installErrorHandling(app: FastifyInstance, docsUrl: string, logger: Logger): void {
  app.decorateReply('errorCode', undefined);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    let appError = error instanceof AppError ? error : fromFastifyError(error);
    if (!appError) {
      logger.error({ err: error, requestId: request.id, url: request.url }, 'unhandled error');
      appError = new AppError(
        'INTERNAL',
        'An internal error occurred; retry later or contact support',
      );
    }
    return sendProblem(request, reply, appError, docsUrl);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, unknownRoute(request), docsUrl),
  );
}

/** What a path no route matches answers (and an operation the request's API version lacks). */
export function unknownRoute(request: FastifyRequest): AppError {
  return new AppError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`);
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses before Fastify sees a
 * request (headers over the 16 KB limit, a malformed request line, a request not received in
 * time). Fastify's default answers its own JSON; partners get a ProblemDetail like any other
 * 4xx. The contract has no code for 431 or 408, so these are 400 REQUEST_INVALID.
 */
export function clientErrorHandler(docsUrl: string) {
  return (error: Error & { code?: string }, socket: Duplex): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const detail =
        error.code === 'HPE_HEADER_OVERFLOW'
          ? 'The request line and headers are larger than the platform accepts'
          : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? 'The request was not received in time'
            : 'The request is not valid HTTP';
      const appError = new AppError('REQUEST_INVALID', detail);
      const body = JSON.stringify({
        type: `${docsUrl}/errors/${appError.code}`,
        title: appError.info.title,
        status: appError.info.status,
        detail,
        instance: '/',
        requestId: randomUUID(),
        timestamp: new Date().toISOString(),
        errorCode: appError.code,
        errorCategory: appError.info.category,
        retryable: appError.info.retryable,
      } satisfies ProblemDetail);
      socket.write(
        `HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
          `PCP-Version: ${LATEST_API_VERSION}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}

/**
 * Fastify's `frameworkErrors`: errors raised before a route is found, which the error
 * handler never sees (a URL that is not valid percent-encoding, a path parameter longer
 * than the router accepts). Without it they answer Fastify's own JSON, echoing the path.
 */
export function frameworkErrorHandler(docsUrl: string) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    // No route, so no onRequest hook has set them: nothing was translated either.
    reply.header('x-request-id', request.id);
    reply.header('pcp-version', LATEST_API_VERSION);
    const appError =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new AppError(
            'NOT_FOUND',
            'No route matches: a path segment is longer than any route takes',
          )
        : new AppError('REQUEST_INVALID', 'The URL is not valid percent-encoding');
    void sendProblem(request, reply, appError, docsUrl);
  };
}
