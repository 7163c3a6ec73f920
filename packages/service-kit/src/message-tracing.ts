import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import { contextHeaders } from '@pcp/contracts';
import { LRUCache } from 'lru-cache';
import { headers as createHeaders, type MsgHdrs } from 'nats';
import { logContextFields, withLogContext, type LogFields } from './log-context.js';

const tracer = trace.getTracer('@pcp/service-kit');

const setter: TextMapSetter<MsgHdrs> = { set: (carrier, key, value) => carrier.set(key, value) };
const getter: TextMapGetter<MsgHdrs | undefined> = {
  get: (carrier, key) => carrier?.get(key) || undefined,
  keys: (carrier) => carrier?.keys() ?? [],
};
const recordSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => (carrier[key] = value),
};
const recordGetter: TextMapGetter<Record<string, string>> = {
  get: (carrier, key) => carrier[key],
  keys: (carrier) => Object.keys(carrier),
};

/** The request a message was caused by, as far as it is known where it is published. */
interface Origin {
  readonly trace: Record<string, string>;
  readonly log: LogFields;
}

function currentOrigin(): Origin {
  const carrier: Record<string, string> = {};
  propagation.inject(otelContext.active(), carrier, recordSetter);
  const { requestId, partnerId } = logContextFields();
  return { trace: carrier, log: { requestId, partnerId } };
}

function writeOrigin(headers: MsgHdrs, origin: Origin): void {
  if (origin.log.requestId) headers.set(contextHeaders.requestId, origin.log.requestId);
  if (origin.log.partnerId) headers.set(contextHeaders.partnerId, origin.log.partnerId);
}

/**
 * Headers for a JetStream publish made while handling a request: the trace context (W3C
 * `traceparent`) of a PRODUCER span and the request and partner ids, so the consumer's
 * work continues the request's trace and its log lines name the request.
 */
export function messageHeaders(subject: string, headers: MsgHdrs = createHeaders()): MsgHdrs {
  return publishHeaders(subject, currentOrigin(), headers);
}

function publishHeaders(subject: string, origin: Origin, headers: MsgHdrs): MsgHdrs {
  const parent = propagation.extract(ROOT_CONTEXT, origin.trace, recordGetter);
  // Ended at once: publishing is the consumer's parent, not a measured wait.
  const span = tracer.startSpan(
    `${subject} publish`,
    {
      kind: SpanKind.PRODUCER,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
    },
    parent,
  );
  propagation.inject(trace.setSpan(parent, span), headers, setter);
  span.end();
  writeOrigin(headers, origin);
  return headers;
}

/**
 * Where each outbox event was written from, until the relay publishes it: events are written
 * inside the request's transaction and published by the relay outside it. Kept in memory,
 * bounded; an event published by another replica or after a restart starts its own trace.
 */
const outboxOrigins = new LRUCache<string, Origin>({ max: 10_000 });

/** Remember the active request as the origin of the outbox event `eventId`. */
export function rememberEventOrigin(eventId: string): void {
  const origin = currentOrigin();
  if (Object.keys(origin.trace).length > 0 || origin.log.requestId) {
    outboxOrigins.set(eventId, origin);
  }
}

/** Headers for publishing the outbox event `eventId`, continuing the request that wrote it. */
export function outboxEventHeaders(eventId: string, subject: string, headers: MsgHdrs): MsgHdrs {
  const origin = outboxOrigins.get(eventId);
  if (!origin) return headers;
  outboxOrigins.delete(eventId);
  return publishHeaders(subject, origin, headers);
}

/**
 * Run a consumer's handler for one message inside a CONSUMER span whose parent is the trace
 * context in the message's headers, with the request and partner ids from them on every line
 * it logs. The span ends when the handler settles.
 */
export function consumeInContext<T>(
  message: { subject: string; headers?: MsgHdrs },
  durable: string,
  handle: () => Promise<T>,
): Promise<T> {
  const parent: Context = propagation.extract(ROOT_CONTEXT, message.headers, getter);
  const span = tracer.startSpan(
    `${message.subject} process`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'nats',
        'messaging.destination.name': message.subject,
        'messaging.consumer.group.name': durable,
      },
    },
    parent,
  );
  const fields: LogFields = {
    requestId: message.headers?.get(contextHeaders.requestId) || undefined,
    partnerId: message.headers?.get(contextHeaders.partnerId) || undefined,
  };
  return runInSpan(parent, span, fields, handle);
}

/** Run `handle` with `span` active and `fields` on its log lines; the span ends when it settles. */
function runInSpan<T>(
  parent: Context,
  span: Span,
  fields: LogFields,
  handle: () => Promise<T>,
): Promise<T> {
  return withLogContext(fields, () =>
    otelContext.with(trace.setSpan(parent, span), handle).then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        throw error;
      },
    ),
  );
}

/**
 * The active request as text, for work stored in a row and done later by whichever replica
 * claims it (a webhook delivery): null outside any request.
 */
export function storedOrigin(): string | null {
  const origin = currentOrigin();
  if (Object.keys(origin.trace).length === 0 && !origin.log.requestId) return null;
  return JSON.stringify(origin);
}

/**
 * Run stored work inside a span continuing the request `stored` (from `storedOrigin`) came
 * from, with its request and partner ids on every line; a missing or unreadable origin runs
 * it in a trace of its own.
 */
export function resumeOrigin<T>(
  stored: string | null,
  spanName: string,
  handle: () => Promise<T>,
): Promise<T> {
  const origin = parseOrigin(stored);
  const parent = propagation.extract(ROOT_CONTEXT, origin.trace, recordGetter);
  const span = tracer.startSpan(spanName, { kind: SpanKind.INTERNAL }, parent);
  return runInSpan(parent, span, origin.log, handle);
}

function parseOrigin(stored: string | null): Origin {
  const none: Origin = { trace: {}, log: {} };
  if (!stored) return none;
  try {
    const value = JSON.parse(stored) as Partial<Origin>;
    const strings = (record: unknown) =>
      Object.fromEntries(
        Object.entries(typeof record === 'object' && record ? record : {}).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string',
        ),
      );
    return { trace: strings(value.trace), log: strings(value.log) };
  } catch {
    return none;
  }
}
