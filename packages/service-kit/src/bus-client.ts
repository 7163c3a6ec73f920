import {
  isErrorCode,
  serviceError,
  type ServiceError,
  type ServiceName,
  type SubjectDefinition,
} from '@pcp/contracts';
import {
  context as otelContext,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type TextMapSetter,
} from '@opentelemetry/api';
import {
  ErrorCode,
  headers as createHeaders,
  NatsError,
  type MsgHdrs,
  type NatsConnection,
} from 'nats';
import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import { AppError } from './app-error.js';
import { writeContextHeaders, type RequestContext } from './context.js';
import type { Logger } from './logger.js';
import type { ServiceMetrics } from './metrics.js';
import { createReplyInbox, type Reply } from './reply-inbox.js';

const tracer = trace.getTracer('@pcp/service-kit');
const headerSetter: TextMapSetter<MsgHdrs> = {
  set: (carrier, key, value) => carrier.set(key, value),
};
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface BusOptions {
  /** Subject prefix of the deployment or test run. */
  prefix: string;
  timeoutMs: number;
  logger: Logger;
  metrics?: ServiceMetrics;
  /**
   * Largest reply a caller accepts, whole (replies past the NATS max payload arrive in
   * parts): a bound on what one reply may cost the caller's memory.
   */
  maxReplyBytes?: number;
}

/** 16 MiB: ample for any reply built from a request under the gateway's body limit. */
const DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024;

export function subjectName(prefix: string, definition: { name: string }): string {
  return `${prefix}.${definition.name}`;
}

/** The caller's side: typed request/reply with both ends validated by the contracts. */
export interface BusClient {
  request<Req extends z.ZodType, Rep extends z.ZodType>(
    definition: SubjectDefinition<Req, Rep>,
    /** JSON bytes (an HTTP body passed on unparsed) are validated by the service. */
    payload: z.input<Req> | Uint8Array,
    ctx: RequestContext,
    options?: BusRequestOptions,
  ): Promise<z.output<Rep>>;
  /**
   * The result's bytes as the service sent them, unparsed: for the gateway, which passes
   * results to HTTP as they are (the service's handler is typed by the contract), and for
   * subjects answered by `handleBytes`. The payload may be JSON bytes too (an HTTP body
   * passed on unparsed): the service parses and validates it like any request. Errors are
   * thrown as with `request`.
   */
  requestRaw<Req extends z.ZodType, Rep extends z.ZodType>(
    definition: SubjectDefinition<Req, Rep>,
    payload: z.input<Req> | Uint8Array,
    ctx: RequestContext,
    options?: BusRequestOptions,
  ): Promise<Buffer>;
}

export interface BusRequestOptions {
  timeoutMs?: number;
  /**
   * No service answering is expected (a start that waits for another service): logged at
   * debug, not as a warning. The caller still gets SERVICE_UNAVAILABLE.
   */
  unansweredIsExpected?: boolean;
}

export function createBusClient(nc: NatsConnection, options: BusOptions): BusClient {
  const inbox = createReplyInbox(
    nc,
    options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES,
    options.logger,
  );

  /** Headers, a client span, metrics and error mapping around one exchange. */
  async function exchange(
    definition: SubjectDefinition<z.ZodType, z.ZodType>,
    payload: unknown,
    ctx: RequestContext,
    requestOptions: BusRequestOptions | undefined,
  ): Promise<Buffer> {
    const subject = subjectName(options.prefix, definition);
    const headers = createHeaders();
    writeContextHeaders(headers, ctx);
    const started = performance.now();
    let outcome = 'ok';
    const span = tracer.startSpan(subject, { kind: SpanKind.CLIENT });
    propagation.inject(trace.setSpan(otelContext.active(), span), headers, headerSetter);
    if (!headers.has('traceparent') && ctx.traceparent) {
      headers.set('traceparent', ctx.traceparent);
      if (ctx.tracestate) headers.set('tracestate', ctx.tracestate);
    }
    try {
      const data =
        payload instanceof Uint8Array ? payload : encoder.encode(JSON.stringify(payload));
      const reply = await inbox
        .request(subject, data, headers, requestOptions?.timeoutMs ?? options.timeoutMs)
        .catch((error: unknown) => {
          throw transportError(error, definition, options.logger, requestOptions);
        });
      return resultOf(reply);
    } catch (error) {
      outcome = error instanceof AppError ? error.code : 'error';
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
      options.metrics?.natsRequestDuration
        .labels(definition.name, outcome)
        .observe((performance.now() - started) / 1000);
    }
  }

  return {
    async request(definition, payload, ctx, requestOptions) {
      const result = await exchange(definition, payload, ctx, requestOptions);
      const parsed = definition.reply.safeParse(safeJson(result));
      if (!parsed.success) {
        options.logger.error(
          { subject: definition.name, issues: parsed.error.issues.slice(0, 10) },
          'reply does not match its contract',
        );
        throw new AppError('INTERNAL', 'Internal error');
      }
      return parsed.data;
    },
    requestRaw: (definition, payload, ctx, requestOptions) =>
      exchange(definition, payload, ctx, requestOptions),
  };
}

/**
 * Transport failures as platform errors. Partners are not told which internal service
 * failed (that is for the logs).
 */
function transportError(
  error: unknown,
  definition: { name: string; service: ServiceName },
  logger: Logger,
  requestOptions: BusRequestOptions | undefined,
): unknown {
  // `subject` and `to`, not `service`: that field is the logging process's own.
  const target = { subject: definition.name, to: definition.service };
  if (error instanceof NatsError) {
    if (error.code === (ErrorCode.NoResponders as string)) {
      if (requestOptions?.unansweredIsExpected) {
        logger.debug(target, 'no service answers the subject yet');
      } else {
        logger.warn(target, 'no service answers the subject');
      }
      return new AppError('SERVICE_UNAVAILABLE', 'The service is unavailable; retry later');
    }
    if (error.code === (ErrorCode.MaxPayloadExceeded as string)) {
      return new AppError('PAYLOAD_TOO_LARGE', 'The request is larger than the platform accepts');
    }
    if (error.code === (ErrorCode.Timeout as string)) {
      logger.warn(target, 'service did not answer in time');
      return new AppError('UPSTREAM_TIMEOUT', 'The request was not answered in time; retry later');
    }
  }
  return error;
}

/** The result bytes of a reply, or the service's typed error thrown as an AppError. */
function resultOf(reply: Reply): Buffer {
  if (reply.status === 'ok') return reply.data;
  const error = reply.status === 'error' ? serviceError.safeParse(safeJson(reply.data)) : undefined;
  if (!error?.success) throw new AppError('INTERNAL', 'Internal error');
  throw fromServiceError(error.data);
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
}

function fromServiceError(error: ServiceError): AppError {
  const code = error.errorCode;
  return new AppError(isErrorCode(code) ? code : 'INTERNAL', error.detail, {
    ...(error.errors ? { errors: error.errors } : {}),
    ...(error.errorsOmitted ? { errorsOmitted: error.errorsOmitted } : {}),
    ...(error.retryAfterSeconds ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
  });
}
