import {
  healthSubject,
  isErrorCode,
  natsInboxPrefix,
  parseContract,
  replyLengthHeader,
  replyPartsHeader,
  replyStatusHeader,
  serviceError,
  type bytesReply,
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
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import {
  connect,
  createInbox,
  ErrorCode,
  headers as createHeaders,
  NatsError,
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
import { withLogContext } from './log-context.js';
import type { NatsTls } from './config.js';
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

/** The reply inbox prefix of connections made as a NATS user (see `natsInboxPrefix`). */
const inboxPrefixes = new WeakMap<NatsConnection, string>();

/**
 * Connect to NATS with the options measured to matter here (DEPENDENCIES.md), as the user
 * `credentials` names (`natsCredentials(config)`) or anonymously (local runs). A user's
 * replies come to its own inbox prefix, the only one its permissions let it read.
 */
export async function connectNats(options: {
  url: string;
  name: string;
  logger: Logger;
  credentials?: { user: string; password: string } | undefined;
  /** TLS (`natsTls(config)`): the connection then is TLS or fails. */
  tls?: NatsTls | undefined;
}): Promise<NatsConnection> {
  const { credentials } = options;
  const inboxPrefix = credentials ? natsInboxPrefix(credentials.user) : undefined;
  const nc = await connect({
    servers: options.url,
    name: options.name,
    // nats.js otherwise builds two Errors with stack traces per request (16% of gateway CPU).
    noAsyncTraces: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...(credentials ? { user: credentials.user, pass: credentials.password, inboxPrefix } : {}),
    ...(options.tls ? { tls: { ...options.tls } } : {}),
  });
  if (inboxPrefix) inboxPrefixes.set(nc, inboxPrefix);
  void (async () => {
    for await (const status of nc.status()) {
      // A permission violation names the subject: the permissions (nats-permissions.ts) or
      // the code is wrong, and the operation was dropped.
      if (status.permissionContext) {
        options.logger.error(
          { nats: status.type, data: status.data, permission: status.permissionContext },
          'nats permission violation',
        );
      } else {
        options.logger.info({ nats: status.type, data: status.data }, 'nats connection status');
      }
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
    options?: { timeoutMs?: number },
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
    options?: { timeoutMs?: number },
  ): Promise<Buffer>;
}

/** One reply, reassembled from its parts. */
interface Reply {
  readonly status: string | undefined;
  readonly data: Buffer;
}

interface PendingReply {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
  status: string | undefined;
  expectedParts: number;
  /** Of the whole reply, when it comes in parts. */
  expectedBytes: number | undefined;
  receivedBytes: number;
  parts: Uint8Array[];
}

/**
 * Request/reply over one wildcard inbox subscription per client (as nats.js's own request
 * does), which also takes replies that come in several messages: a reply past the NATS
 * max payload is sent as its first part with `Pcp-Parts: n` and then n − 1 bare parts, in
 * order (NATS keeps the order of one publisher's messages to one subscriber).
 */
function createReplyInbox(nc: NatsConnection, maxReplyBytes: number, logger: Logger) {
  const prefix = `${createInbox(inboxPrefixes.get(nc))}.`;
  const pending = new Map<string, PendingReply>();
  let nextToken = 0;

  function settle(token: string, entry: PendingReply) {
    clearTimeout(entry.timer);
    pending.delete(token);
    return entry;
  }

  function receive(msg: Msg) {
    const token = msg.subject.slice(prefix.length);
    const entry = pending.get(token);
    if (!entry) return; // late: its caller timed out already
    try {
      take(token, entry, msg);
    } catch (error) {
      // Reading a header block nats.js cannot decode throws, and a throw from here would end
      // nats.js's reader and so every exchange on the connection: fail this one instead.
      logger.error({ err: error, subject: msg.subject }, 'reply could not be read');
      settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
    }
  }

  /** One message of the reply `entry` waits for: its first part, a later one, or all of it. */
  function take(token: string, entry: PendingReply, msg: Msg) {
    const status = msg.headers?.get(replyStatusHeader) || undefined;
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      settle(token, entry).reject(NatsError.errorForCode(ErrorCode.NoResponders));
      return;
    }
    // A message with a status starts a reply: the first part, or a small error that replaces
    // parts already sent when the responder could not send the rest.
    if (status !== undefined) {
      const parts = Number(msg.headers?.get(replyPartsHeader) || 1);
      const bytes = parts > 1 ? Number(msg.headers?.get(replyLengthHeader)) : msg.data.length;
      if (
        !Number.isSafeInteger(parts) ||
        !Number.isSafeInteger(bytes) ||
        parts < 1 ||
        bytes < 0 ||
        parts > Math.max(1, Math.ceil(bytes / MIN_PART_BYTES))
      ) {
        logger.error({ subject: msg.subject, parts, bytes }, 'reply announces no usable size');
        settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
        return;
      }
      if (bytes > maxReplyBytes) {
        logger.error({ subject: msg.subject, bytes }, 'reply is larger than this caller accepts');
        settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
        return;
      }
      entry.status = status;
      entry.expectedParts = parts;
      entry.expectedBytes = bytes;
      entry.receivedBytes = 0;
      entry.parts = [];
    }
    entry.parts.push(msg.data);
    entry.receivedBytes += msg.data.length;
    const complete = entry.parts.length === entry.expectedParts;
    if (
      entry.expectedBytes !== undefined &&
      (entry.receivedBytes > entry.expectedBytes ||
        (complete && entry.receivedBytes !== entry.expectedBytes))
    ) {
      // A part lost or out of place: fail rather than hand back a wrong body.
      logger.error(
        { subject: msg.subject, expected: entry.expectedBytes, received: entry.receivedBytes },
        'reply parts do not add up to the announced length',
      );
      settle(token, entry).reject(new AppError('INTERNAL', 'Internal error'));
      return;
    }
    if (!complete) {
      // The wait is for the next part now: a long reply that keeps arriving is not cut off.
      entry.timer.refresh();
      return;
    }
    const data = entry.parts.length === 1 ? toBuffer(entry.parts[0]!) : Buffer.concat(entry.parts);
    settle(token, entry).resolve({ status: entry.status, data });
  }

  nc.subscribe(`${prefix}*`, {
    callback: (error, msg) => {
      if (error) logger.error({ err: error }, 'reply inbox failed');
      else receive(msg);
    },
  });

  return {
    request(subject: string, data: Uint8Array, headers: MsgHdrs, timeoutMs: number) {
      return new Promise<Reply>((resolve, reject) => {
        const token = (nextToken++).toString(36);
        const timer = setTimeout(() => {
          pending.delete(token);
          reject(NatsError.errorForCode(ErrorCode.Timeout));
        }, timeoutMs);
        pending.set(token, {
          resolve,
          reject,
          timer,
          status: undefined,
          expectedParts: 1,
          expectedBytes: undefined,
          receivedBytes: 0,
          parts: [],
        });
        try {
          nc.publish(subject, data, { reply: prefix + token, headers });
        } catch (error) {
          settle(token, pending.get(token)!);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    },
  };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
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
    timeoutMs: number | undefined,
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
        .request(subject, data, headers, timeoutMs ?? options.timeoutMs)
        .catch((error: unknown) => {
          throw transportError(error, definition.service, options.logger);
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
      const result = await exchange(definition, payload, ctx, requestOptions?.timeoutMs);
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
      exchange(definition, payload, ctx, requestOptions?.timeoutMs),
  };
}

/**
 * Transport failures as platform errors. Partners are not told which internal service
 * failed (that is for the logs).
 */
function transportError(error: unknown, service: ServiceName, logger: Logger): unknown {
  if (error instanceof NatsError) {
    if (error.code === (ErrorCode.NoResponders as string)) {
      logger.warn({ service }, 'no service answers the subject');
      return new AppError('SERVICE_UNAVAILABLE', 'The service is unavailable; retry later');
    }
    if (error.code === (ErrorCode.MaxPayloadExceeded as string)) {
      return new AppError('PAYLOAD_TOO_LARGE', 'The request is larger than the platform accepts');
    }
    if (error.code === (ErrorCode.Timeout as string)) {
      logger.warn({ service }, 'service did not answer in time');
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

/** A subject bound to its handler; built with `handle()` so both stay typed. */
export interface HandlerBinding {
  readonly definition: SubjectDefinition<z.ZodType, z.ZodType>;
  readonly handler: (input: unknown, ctx: RequestContext) => Promise<unknown>;
  /** Set by `handleBytes`: the handler's result is the reply's bytes, not JSON. */
  readonly repliesBytes?: true;
}

export function handle<Req extends z.ZodType, Rep extends z.ZodType>(
  definition: SubjectDefinition<Req, Rep>,
  handler: (input: z.output<Req>, ctx: RequestContext) => Promise<z.input<Rep>>,
): HandlerBinding {
  return { definition, handler: handler as HandlerBinding['handler'] };
}

/** Like `handle`, for a subject whose reply is bytes (callers use `requestRaw`). */
export function handleBytes<Req extends z.ZodType>(
  definition: SubjectDefinition<Req, typeof bytesReply>,
  handler: (input: z.output<Req>, ctx: RequestContext) => Promise<Uint8Array>,
): HandlerBinding {
  return { definition, handler: handler as HandlerBinding['handler'], repliesBytes: true };
}

export interface ServedService {
  /** Stop taking requests, then wait (up to `timeoutMs`) for those in flight to answer. */
  stop(timeoutMs?: number): Promise<void>;
  /** False once the NATS service stopped for another reason than `stop()` (readiness). */
  serving(): boolean;
}

/**
 * The service's side: registers with the NATS services API (so `$SRV.PING/INFO/STATS`
 * answer) with one endpoint per subject, in a queue group so replicas share the load.
 * Requests are validated against the contract; errors go back as typed replies, and no
 * request, however hostile, can make the process fail: whatever a handler throws becomes
 * an error reply, and a reply that cannot be sent becomes a small INTERNAL one.
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
  let stopping = false;
  // nats.js stops the whole service when one endpoint's subscription closes or errors.
  void service.stopped.then((reason) => {
    if (!stopping) {
      options.logger.error(
        { err: reason, service: options.service },
        'NATS service stopped; no longer serving its subjects',
      );
    }
  });
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
        const work = dispatch(binding, msg, subject, nc, options)
          .catch((failure: unknown) =>
            options.logger.error({ err: failure, subject }, 'request dispatch failed'),
          )
          .finally(() => inFlight.delete(work));
        inFlight.add(work);
      },
    });
  }
  return {
    serving: () => !service.isStopped,
    async stop(timeoutMs = 5_000) {
      stopping = true;
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

const internalReply = encoder.encode(
  JSON.stringify({ errorCode: 'INTERNAL', detail: 'Internal error' } satisfies ServiceError),
);

async function dispatch(
  binding: HandlerBinding,
  msg: Msg,
  subject: string,
  nc: NatsConnection,
  options: BusOptions,
): Promise<void> {
  const started = performance.now();
  let ctx: RequestContext | undefined;
  let span: Span | undefined;
  let status: 'ok' | 'error' = 'ok';
  let errorCode = 'ok';
  let reply: Uint8Array;
  try {
    // Inside the try: nats.js decodes headers when first read, and throws on a bad block.
    ctx = readContextHeaders(msg.headers);
    const parent = propagation.extract(ROOT_CONTEXT, msg.headers, headerGetter);
    span = tracer.startSpan(subject, { kind: SpanKind.SERVER }, parent);
    const input = parseContract(binding.definition.request, parseJsonBytes(msg.data));
    if (!input.success) throw requestInvalid(input.error.issues, input);
    const context = ctx;
    const active = trace.setSpan(parent, span);
    // Every line the handler logs names the request, its partner and its trace.
    const result = await withLogContext(context, () =>
      otelContext.with(active, async () => {
        const handled = await binding.handler(input.data, context);
        options.logger.debug({ subject }, 'request handled');
        return handled;
      }),
    );
    reply = replyBody(binding, result);
  } catch (error) {
    status = 'error';
    if (error instanceof AppError) {
      errorCode = error.code;
      reply = encoder.encode(JSON.stringify(error.toServiceError()));
    } else {
      // A header block nats.js cannot decode lands here too: our peers sent it, not a
      // partner, so it is an internal fault (INTERNAL), not the partner's REQUEST_INVALID.
      errorCode = 'INTERNAL';
      options.logger.error({ err: error, subject, requestId: ctx?.requestId }, 'handler failed');
      span?.setStatus({ code: SpanStatusCode.ERROR });
      reply = internalReply;
    }
  }
  span?.end();
  const partBytes = maxPartBytes(nc.info?.max_payload);
  try {
    // nats.js drops a reply to a closed connection without a word; say so in the logs.
    if (nc.isClosed()) throw NatsError.errorForCode(ErrorCode.ConnectionClosed);
    if (!respondInParts(msg, status, reply, partBytes)) {
      options.logger.warn({ subject, requestId: ctx?.requestId }, 'request had no reply subject');
    }
  } catch (error) {
    options.logger.error(
      { err: error, subject, requestId: ctx?.requestId, bytes: reply.length },
      'reply could not be sent',
    );
    errorCode = 'INTERNAL';
    try {
      if (!nc.isClosed()) respondInParts(msg, 'error', internalReply, partBytes);
    } catch (fallback) {
      options.logger.warn({ err: fallback, subject }, 'INTERNAL reply could not be sent either');
    }
  }
  options.metrics?.natsHandlerDuration
    .labels(binding.definition.name, errorCode)
    .observe((performance.now() - started) / 1000);
}

/** The bytes a handler's result is sent as; a result that cannot be sent is the handler's bug. */
function replyBody(binding: HandlerBinding, result: unknown): Uint8Array {
  if (result === undefined) throw new Error('the handler returned nothing');
  if (binding.repliesBytes) {
    if (result instanceof Uint8Array) return result;
    throw new Error('the handler returned no bytes');
  }
  // undefined for a function or a symbol: nothing to send either.
  const json = JSON.stringify(result) as string | undefined;
  if (json === undefined) throw new Error('the handler returned nothing JSON can carry');
  return encoder.encode(json);
}

/** Room for headers and protocol overhead below the server's max payload. */
const PART_HEADROOM_BYTES = 4_096;

/** Every part but the last is at least this long, whatever the server's max payload. */
const MIN_PART_BYTES = 16_384;

function maxPartBytes(maxPayload: number | undefined): number {
  return Math.max(MIN_PART_BYTES, (maxPayload ?? 1024 * 1024) - PART_HEADROOM_BYTES);
}

/** Send a reply in one message, or in parts when it is larger than a message may be. */
function respondInParts(msg: Msg, status: 'ok' | 'error', data: Uint8Array, partBytes: number) {
  const headers = createHeaders();
  headers.set(replyStatusHeader, status);
  const parts = Math.max(1, Math.ceil(data.length / partBytes));
  if (parts > 1) {
    headers.set(replyPartsHeader, String(parts));
    headers.set(replyLengthHeader, String(data.length));
  }
  if (!msg.respond(data.subarray(0, partBytes), { headers })) return false;
  for (let offset = partBytes; offset < data.length; offset += partBytes) {
    msg.respond(data.subarray(offset, offset + partBytes));
  }
  return true;
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
): { start(): Promise<void>; stop(timeoutMs?: number): Promise<void>; serving(): boolean } {
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
    async stop(timeoutMs?: number) {
      await served?.stop(timeoutMs);
      served = undefined;
    },
    serving: () => served?.serving() ?? false,
  };
}
