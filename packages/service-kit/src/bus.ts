import {
  healthSubject,
  isErrorCode,
  replyStatusHeader,
  serviceError,
  type ServiceError,
  type ServiceName,
  type SubjectDefinition,
} from '@pcp/contracts';
import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import {
  connect,
  ErrorCode,
  headers as createHeaders,
  NatsError,
  RequestStrategy,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Service,
} from 'nats';
import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import { AppError, requestInvalid } from './app-error.js';
import { readContextHeaders, writeContextHeaders, type RequestContext } from './context.js';
import { parseJsonBytes } from './json-body.js';
import type { Logger } from './logger.js';
import type { ServiceMetrics } from './metrics.js';

const tracer = trace.getTracer('@pcp/service-kit');
const headerSetter: TextMapSetter<MsgHdrs> = {
  set: (carrier, key, value) => carrier.set(key, value),
};
const headerGetter: TextMapGetter<MsgHdrs | undefined> = {
  get: (carrier, key) => carrier?.get(key) || undefined,
  keys: (carrier) => carrier?.keys() ?? [],
};
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Connect to NATS with the options measured to matter here (DEPENDENCIES.md). */
export async function connectNats(options: {
  url: string;
  name: string;
  logger: Logger;
}): Promise<NatsConnection> {
  const nc = await connect({
    servers: options.url,
    name: options.name,
    // nats.js otherwise builds two Errors with stack traces per request (16% of gateway CPU).
    noAsyncTraces: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
  void (async () => {
    for await (const status of nc.status()) {
      options.logger.info({ nats: status.type, data: status.data }, 'nats connection status');
    }
  })();
  return nc;
}

/** Close a NATS connection after its subscriptions drain, but never wait past `timeoutMs`. */
export async function drainNats(nc: NatsConnection, timeoutMs: number): Promise<void> {
  if (nc.isClosed()) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const outcome = await Promise.race([nc.drain().then(() => 'drained' as const), deadline]);
  clearTimeout(timer);
  if (outcome === 'timeout' && !nc.isClosed()) await nc.close();
}

export interface BusOptions {
  /** Subject prefix of the deployment or test run. */
  prefix: string;
  timeoutMs: number;
  logger: Logger;
  metrics?: ServiceMetrics;
}

export function subjectName(prefix: string, definition: { name: string }): string {
  return `${prefix}.${definition.name}`;
}

/** The caller's side: typed request/reply with both ends validated by the contracts. */
export interface BusClient {
  request<Req extends z.ZodType, Rep extends z.ZodType>(
    definition: SubjectDefinition<Req, Rep>,
    payload: z.input<Req>,
    ctx: RequestContext,
    options?: { timeoutMs?: number },
  ): Promise<z.output<Rep>>;
  /**
   * The result's JSON bytes as the service sent them, unparsed: for the gateway, which
   * passes results to HTTP as they are (the service's handler is typed by the contract).
   * The payload may be JSON bytes too (an HTTP body passed on unparsed): the service parses
   * and validates it like any request. Errors are thrown as with `request`.
   */
  requestRaw<Req extends z.ZodType, Rep extends z.ZodType>(
    definition: SubjectDefinition<Req, Rep>,
    payload: z.input<Req> | Uint8Array,
    ctx: RequestContext,
    options?: { timeoutMs?: number },
  ): Promise<Buffer>;
  /** A subject answered by `handleStream`: the reply's metadata and a body of any size. */
  requestStream<Req extends z.ZodType, Rep extends z.ZodType>(
    definition: SubjectDefinition<Req, Rep>,
    payload: z.input<Req>,
    ctx: RequestContext,
    options?: { timeoutMs?: number },
  ): Promise<{ result: z.output<Rep>; body: Buffer }>;
}

export function createBusClient(nc: NatsConnection, options: BusOptions): BusClient {
  /** Headers, a client span, metrics and error mapping around one exchange. */
  async function exchange<T>(
    definition: SubjectDefinition<z.ZodType, z.ZodType>,
    ctx: RequestContext,
    perform: (subject: string, headers: MsgHdrs) => Promise<T>,
  ): Promise<T> {
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
      return await perform(subject, headers).catch((error: unknown) => {
        throw transportError(error, definition.service);
      });
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

  function parseResult(definition: SubjectDefinition<z.ZodType, z.ZodType>, reply: Msg) {
    const parsed = definition.reply.safeParse(JSON.parse(decoder.decode(resultOf(reply))));
    if (!parsed.success) {
      options.logger.error(
        { subject: definition.name, issues: parsed.error.issues },
        'reply does not match its contract',
      );
      throw new AppError('INTERNAL', 'Internal error');
    }
    return parsed.data;
  }

  return {
    request: (definition, payload, ctx, requestOptions) =>
      exchange(definition, ctx, async (subject, headers) => {
        const reply = await nc.request(subject, encoder.encode(JSON.stringify(payload)), {
          timeout: requestOptions?.timeoutMs ?? options.timeoutMs,
          headers,
        });
        return parseResult(definition, reply) as z.output<typeof definition.reply>;
      }),

    requestRaw: (definition, payload, ctx, requestOptions) =>
      exchange(definition, ctx, async (subject, headers) => {
        const data =
          payload instanceof Uint8Array ? payload : encoder.encode(JSON.stringify(payload));
        const reply = await nc.request(subject, data, {
          timeout: requestOptions?.timeoutMs ?? options.timeoutMs,
          headers,
        });
        const result = resultOf(reply);
        return Buffer.from(result.buffer, result.byteOffset, result.byteLength);
      }),

    requestStream: (definition, payload, ctx, requestOptions) =>
      exchange(definition, ctx, async (subject, headers) => {
        const replies = await nc.requestMany(subject, encoder.encode(JSON.stringify(payload)), {
          strategy: RequestStrategy.SentinelMsg,
          maxWait: requestOptions?.timeoutMs ?? options.timeoutMs,
          headers,
          noMux: true,
        });
        let result: unknown;
        let first = true;
        const chunks: Uint8Array[] = [];
        for await (const reply of replies) {
          if (reply.data.length === 0) {
            return {
              result: result as z.output<typeof definition.reply>,
              body: Buffer.concat(chunks),
            };
          }
          if (first) result = parseResult(definition, reply);
          else chunks.push(reply.data);
          first = false;
        }
        throw new NatsError('stream ended before its last chunk', ErrorCode.Timeout);
      }),
  };
}

function transportError(error: unknown, service: ServiceName): unknown {
  if (error instanceof NatsError) {
    if (error.code === (ErrorCode.NoResponders as string)) {
      return new AppError(
        'SERVICE_UNAVAILABLE',
        `The ${service} service is unavailable; retry later`,
      );
    }
    if (error.code === (ErrorCode.MaxPayloadExceeded as string)) {
      return new AppError('PAYLOAD_TOO_LARGE', 'The request is larger than the platform accepts');
    }
    if (error.code === (ErrorCode.Timeout as string)) {
      return new AppError('UPSTREAM_TIMEOUT', `The ${service} service did not answer in time`);
    }
  }
  return error;
}

/** The result bytes of a reply, or the service's typed error thrown as an AppError. */
function resultOf(reply: Msg): Uint8Array {
  const status = reply.headers?.get(replyStatusHeader);
  if (status === 'ok') return reply.data;
  const error = status === 'error' ? serviceError.safeParse(safeJson(reply.data)) : undefined;
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
    ...(error.retryAfterSeconds ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
  });
}

/** A subject bound to its handler; built with `handle()` so both stay typed. */
export interface HandlerBinding {
  readonly definition: SubjectDefinition<z.ZodType, z.ZodType>;
  readonly handler: (input: unknown, ctx: RequestContext) => Promise<unknown>;
  /** Set by `handleStream`: the handler returns `{result, body}` and the body goes in chunks. */
  readonly streamsBody?: true;
}

/** What a `handleStream` handler returns: the reply and a body of any size (or none). */
export interface StreamedReply<T> {
  result: T;
  body?: Uint8Array;
}

export function handle<Req extends z.ZodType, Rep extends z.ZodType>(
  definition: SubjectDefinition<Req, Rep>,
  handler: (input: z.output<Req>, ctx: RequestContext) => Promise<z.input<Rep>>,
): HandlerBinding {
  return { definition, handler: handler as HandlerBinding['handler'] };
}

/**
 * Like `handle`, for replies whose body may exceed the NATS max payload: the reply goes
 * first, then the body in chunks, then an empty message (the caller's `requestStream`).
 */
export function handleStream<Req extends z.ZodType, Rep extends z.ZodType>(
  definition: SubjectDefinition<Req, Rep>,
  handler: (input: z.output<Req>, ctx: RequestContext) => Promise<StreamedReply<z.input<Rep>>>,
): HandlerBinding {
  return { definition, handler: handler as HandlerBinding['handler'], streamsBody: true };
}

export interface ServedService {
  /** Stop taking requests, then wait (up to `timeoutMs`) for those in flight to answer. */
  stop(timeoutMs?: number): Promise<void>;
}

/**
 * The service's side: registers with the NATS services API (so `$SRV.PING/INFO/STATS`
 * answer) with one endpoint per subject, in a queue group so replicas share the load.
 * Requests are validated against the contract; errors go back as typed replies.
 */
export async function serveSubjects(
  nc: NatsConnection,
  options: BusOptions & { service: ServiceName; version: string },
  bindings: readonly HandlerBinding[],
): Promise<ServedService> {
  const service: Service = await nc.services.add({
    name: options.service,
    version: options.version,
    queue: options.service,
    metadata: { prefix: options.prefix },
  });
  const inFlight = new Set<Promise<void>>();
  const health = handle(healthSubject(options.service), () =>
    Promise.resolve({ service: options.service, status: 'ok' as const }),
  );
  for (const binding of [health, ...bindings]) {
    const subject = subjectName(options.prefix, binding.definition);
    service.addEndpoint(binding.definition.name.replace(/\./g, '_'), {
      subject,
      handler: (error, msg) => {
        if (error) {
          options.logger.error({ err: error, subject }, 'endpoint subscription failed');
          return;
        }
        const work = dispatch(binding, msg, subject, {
          ...options,
          maxPayload: nc.info?.max_payload,
        }).finally(() => inFlight.delete(work));
        inFlight.add(work);
      },
    });
  }
  return {
    async stop(timeoutMs = 5_000) {
      await service.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

async function dispatch(
  binding: HandlerBinding,
  msg: Msg,
  subject: string,
  options: BusOptions & { maxPayload?: number | undefined },
): Promise<void> {
  const started = performance.now();
  const ctx = readContextHeaders(msg.headers);
  const parent = propagation.extract(ROOT_CONTEXT, msg.headers, headerGetter);
  const span = tracer.startSpan(subject, { kind: SpanKind.SERVER }, parent);
  let outcome: { ok: true; result: unknown } | { ok: false; error: ServiceError };
  let body: Uint8Array | undefined;
  try {
    const input = binding.definition.request.safeParse(parseJsonBytes(msg.data));
    if (!input.success) throw requestInvalid(input.error.issues);
    const result = await otelContext.with(trace.setSpan(parent, span), () =>
      binding.handler(input.data, ctx),
    );
    if (binding.streamsBody) {
      const streamed = result as StreamedReply<unknown>;
      outcome = { ok: true, result: streamed.result };
      body = streamed.body;
    } else {
      outcome = { ok: true, result };
    }
  } catch (error) {
    if (error instanceof AppError) {
      outcome = { ok: false, error: error.toServiceError() };
    } else {
      options.logger.error({ err: error, subject, requestId: ctx.requestId }, 'handler failed');
      span.setStatus({ code: SpanStatusCode.ERROR });
      outcome = { ok: false, error: { errorCode: 'INTERNAL', detail: 'Internal error' } };
    }
  }
  span.end();
  const replyHeaders = createHeaders();
  replyHeaders.set(replyStatusHeader, outcome.ok ? 'ok' : 'error');
  const reply = encoder.encode(JSON.stringify(outcome.ok ? outcome.result : outcome.error));
  if (!msg.respond(reply, { headers: replyHeaders })) {
    options.logger.warn({ subject, requestId: ctx.requestId }, 'request had no reply subject');
  }
  if (binding.streamsBody) respondInChunks(msg, body, maxChunkBytes(options));
  options.metrics?.natsHandlerDuration
    .labels(binding.definition.name, outcome.ok ? 'ok' : outcome.error.errorCode)
    .observe((performance.now() - started) / 1000);
}

/** Room for headers and protocol overhead below the server's max payload. */
const CHUNK_HEADROOM_BYTES = 4_096;

function maxChunkBytes(options: { maxPayload?: number | undefined }): number {
  return Math.max(16_384, (options.maxPayload ?? 1024 * 1024) - CHUNK_HEADROOM_BYTES);
}

function respondInChunks(msg: Msg, body: Uint8Array | undefined, chunkBytes: number): void {
  for (let offset = 0; body && offset < body.length; offset += chunkBytes) {
    msg.respond(body.subarray(offset, offset + chunkBytes));
  }
  msg.respond(new Uint8Array(0));
}

/**
 * A service that answers `bindings` (plus its health subject) while started: the usual
 * body of a `createXService(deps)` factory.
 */
export function createSubjectService(
  deps: {
    nc: NatsConnection;
    logger: Logger;
    metrics?: ServiceMetrics;
    subjectPrefix: string;
    requestTimeoutMs: number;
  },
  service: { name: ServiceName; version: string },
  bindings: readonly HandlerBinding[],
): { start(): Promise<void>; stop(): Promise<void> } {
  let served: ServedService | undefined;
  return {
    async start() {
      served = await serveSubjects(
        deps.nc,
        {
          service: service.name,
          version: service.version,
          prefix: deps.subjectPrefix,
          timeoutMs: deps.requestTimeoutMs,
          logger: deps.logger,
          ...(deps.metrics ? { metrics: deps.metrics } : {}),
        },
        bindings,
      );
    },
    async stop() {
      await served?.stop();
      served = undefined;
    },
  };
}
