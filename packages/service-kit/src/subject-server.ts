import {
  healthSubject,
  parseContract,
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
} from '@opentelemetry/api';
import {
  ErrorCode,
  NatsError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Service,
} from 'nats';
import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import { AppError, requestInvalid } from './app-error.js';
import { subjectName, type BusOptions } from './bus-client.js';
import { readContextHeaders, type RequestContext } from './context.js';
import { parseJsonBytes } from './json-body.js';
import { withLogContext } from './log-context.js';
import type { Logger } from './logger.js';
import type { ServiceMetrics } from './metrics.js';
import { maxPartBytes, respondInParts } from './reply-parts.js';

const tracer = trace.getTracer('@pcp/service-kit');
const headerGetter: TextMapGetter<MsgHdrs | undefined> = {
  get: (carrier, key) => carrier?.get(key) || undefined,
  keys: (carrier) => carrier?.keys() ?? [],
};
const encoder = new TextEncoder();

/** A subject bound to its handler; built with `handle()` so both stay typed. */
export interface HandlerBinding {
  readonly definition: SubjectDefinition<z.ZodType, z.ZodType>;
  readonly handler: (input: unknown, ctx: RequestContext) => Promise<unknown>;
  /** Set by `handleBytes`: the handler's result is the reply's bytes, not JSON. */
  readonly repliesBytes?: true;
  /**
   * Set by `handleBytes` with `rawRequest`: the handler takes the request's bytes as they came
   * and checks them itself (`parseRequestBytes`).
   */
  readonly takesBytes?: true;
  /** Set by `handle` with `acceptsAsIs`: a body it accepts is the handler's input unparsed. */
  readonly acceptsAsIs?: (body: unknown) => boolean;
}

/**
 * A subject's handler. `acceptsAsIs` is a fast check of a parsed JSON body: true only for a
 * body the contract accepts and returns unchanged (no NUL, no key to strip, nothing to
 * transform), which then skips the contract's parse; any other body is parsed as ever, so its
 * errors are the contract's.
 */
export function handle<Req extends z.ZodType, Rep extends z.ZodType>(
  definition: SubjectDefinition<Req, Rep>,
  handler: (input: z.output<Req>, ctx: RequestContext) => Promise<z.input<Rep>>,
  options: { acceptsAsIs?: (body: unknown) => body is z.output<Req> } = {},
): HandlerBinding {
  return {
    definition,
    handler: handler as HandlerBinding['handler'],
    ...(options.acceptsAsIs ? { acceptsAsIs: options.acceptsAsIs } : {}),
  };
}

/**
 * Like `handle`, for a subject whose reply is bytes (callers use `requestRaw`). With
 * `rawRequest` the handler gets the request's bytes unparsed, for one that can answer some
 * requests from their bytes alone; it must answer every other one as if `parseRequestBytes`
 * had run first.
 */
export function handleBytes<Req extends z.ZodType>(
  definition: SubjectDefinition<Req, typeof bytesReply>,
  handler: (input: z.output<Req>, ctx: RequestContext) => Promise<Uint8Array>,
): HandlerBinding;
export function handleBytes<Req extends z.ZodType>(
  definition: SubjectDefinition<Req, typeof bytesReply>,
  handler: (request: Uint8Array, ctx: RequestContext) => Promise<Uint8Array>,
  options: { rawRequest: true },
): HandlerBinding;
export function handleBytes<Req extends z.ZodType>(
  definition: SubjectDefinition<Req, typeof bytesReply>,
  handler: (input: never, ctx: RequestContext) => Promise<Uint8Array>,
  options?: { rawRequest: true },
): HandlerBinding {
  return {
    definition,
    handler: handler as HandlerBinding['handler'],
    repliesBytes: true,
    ...(options?.rawRequest ? { takesBytes: true as const } : {}),
  };
}

/**
 * A request's bytes as every handler gets them: parsed as JSON and checked against the
 * subject's contract (REQUEST_INVALID otherwise).
 */
export function parseRequestBytes<Req extends z.ZodType>(
  definition: SubjectDefinition<Req, z.ZodType>,
  bytes: Uint8Array,
): z.output<Req> {
  return contractInput(definition, parseJsonBytes(bytes));
}

function contractInput<Req extends z.ZodType>(
  definition: SubjectDefinition<Req, z.ZodType>,
  body: unknown,
): z.output<Req> {
  const input = parseContract(definition.request, body);
  if (!input.success) throw requestInvalid(input.error.issues, input);
  return input.data;
}

/**
 * A service's own subjects, answered in-process with the contract's checks on both ends and
 * the payload and reply passed through JSON as a message would carry them. A service's NATS
 * user may not publish to its own subjects (so none can pass for the gateway through
 * itself; docs/messaging.md#subjects), so what a service asks of itself goes through here.
 * `bind` takes the bindings once they are built (a handler may call its siblings).
 */
export interface LocalSubjects {
  bind(bindings: readonly HandlerBinding[]): void;
  request<Req extends z.ZodType, Rep extends z.ZodType>(
    definition: SubjectDefinition<Req, Rep>,
    payload: z.input<Req>,
    ctx: RequestContext,
  ): Promise<z.output<Rep>>;
}

export function createLocalSubjects(): LocalSubjects {
  let served: ReadonlyMap<string, HandlerBinding> = new Map();
  return {
    bind(bindings) {
      served = new Map(bindings.map((binding) => [binding.definition.name, binding]));
    },
    async request(definition, payload, ctx) {
      const binding = served.get(definition.name);
      if (!binding || binding.repliesBytes) {
        throw new Error(`${definition.name} is not one of this service's JSON subjects`);
      }
      const input = parseContract(definition.request, JSON.parse(JSON.stringify(payload)));
      if (!input.success) throw requestInvalid(input.error.issues, input);
      const reply: unknown = await binding.handler(input.data, ctx);
      return definition.reply.parse(JSON.parse(JSON.stringify(reply)));
    },
  };
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
    const input: unknown = binding.takesBytes ? msg.data : requestOf(binding, msg.data);
    const context = ctx;
    const active = trace.setSpan(parent, span);
    // Every line the handler logs names the request, its partner and its trace.
    const result = await withLogContext(context, () =>
      otelContext.with(active, async () => {
        const handled = await binding.handler(input, context);
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

/** A request's input as the binding's handler takes it. */
function requestOf(binding: HandlerBinding, bytes: Uint8Array): unknown {
  const body = parseJsonBytes(bytes);
  return binding.acceptsAsIs?.(body) ? body : contractInput(binding.definition, body);
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
