import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line written while handling one request or message carries. */
export interface LogFields {
  readonly requestId?: string;
  readonly partnerId?: string;
}

/**
 * A getter rather than a value: the gateway learns the partner only after authenticating,
 * so lines logged later in the same request must read it then.
 */
type LogFieldsSource = LogFields | (() => LogFields);

const storage = new AsyncLocalStorage<LogFieldsSource>();

/** Run `fn` with `fields` on every line it (and what it awaits) logs. */
export function withLogContext<T>(fields: LogFieldsSource, fn: () => T): T {
  return storage.run(fields, fn);
}

/**
 * Run `fn` outside the request that triggered it: background work a request only wakes (a
 * relay batch, a dispatcher run) serves many requests, and must not log or trace as one.
 */
export function detachFromRequest<T>(fn: () => T): T {
  return storage.exit(() => context.with(ROOT_CONTEXT, fn));
}

const bySpan = new WeakMap<object, LogFieldsSource>();

/**
 * Give the active span's lines `fields` (when no `withLogContext` is closer). For an HTTP
 * server: its instrumentation keeps the request's span active in every callback of the
 * request, body and response events included, where an AsyncLocalStorage entered in a hook
 * is lost.
 */
export function bindLogContextToSpan(fields: LogFieldsSource): void {
  const span = trace.getActiveSpan();
  if (span) bySpan.set(span, fields);
}

/**
 * The fields pino adds to each line (its `mixin`): request and partner from the log context,
 * trace and span from the active OpenTelemetry span. A line's own fields win over these.
 */
export function logContextFields(): Record<string, string> {
  const fields: Record<string, string> = {};
  const span = trace.getActiveSpan();
  const source = storage.getStore() ?? (span && bySpan.get(span));
  const current = typeof source === 'function' ? source() : source;
  if (current?.requestId) fields.requestId = current.requestId;
  if (current?.partnerId) fields.partnerId = current.partnerId;
  const ids = span?.spanContext();
  if (ids && trace.isSpanContextValid(ids)) {
    fields.traceId = ids.traceId;
    fields.spanId = ids.spanId;
  }
  return fields;
}
