import {
  context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  trace,
  type SpanContext,
} from '@opentelemetry/api';
import { getRPCMetadata, RPCType, W3CTraceContextPropagator } from '@opentelemetry/core';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { RedisInstrumentation } from '@opentelemetry/instrumentation-redis';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  NoopSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import http, { type IncomingMessage, type RequestListener } from 'node:http';

/** Probes and scrapes are not worth a trace each. */
function isOpsRequest(request: IncomingMessage): boolean {
  const path = request.url ?? '';
  return path.startsWith('/health') || path.startsWith('/metrics');
}

/**
 * The maintained instrumentations for what the services use: pg (every service's Postgres),
 * node-redis v5 (the gateway's rate limits), node:http (incoming requests of the gateway's
 * Fastify, whose route the gateway names, and safe-fetch's catalog downloads and webhook
 * deliveries) and undici (the payments processor client). Client spans only inside a trace:
 * the outbox relay's and dispatchers' background polls would otherwise start one per tick.
 */
function createInstrumentations(): Instrumentation[] {
  return [
    new PgInstrumentation({ requireParentSpan: true }),
    new RedisInstrumentation({ requireParentSpan: true }),
    new HttpInstrumentation({
      requireParentforOutgoingSpans: true,
      ignoreIncomingRequestHook: isOpsRequest,
    }),
    new UndiciInstrumentation({ requireParentforSpans: true }),
  ];
}

let instrumented = false;

/**
 * Patch pg, redis, http and undici. They patch modules as they load, so this must run
 * before the service imports them: the `@pcp/service-kit/instrument` preload does it (with
 * the ESM loader hook node:http needs); `startTracing` does it too for processes without it.
 */
export function registerInstrumentation(): void {
  if (instrumented) return;
  instrumented = true;
  registerInstrumentations({ instrumentations: createInstrumentations() });
}

/**
 * Name the incoming HTTP request's server span after its route (`POST /v1/orders/{id}`, with
 * `http.route`) instead of the bare method; call it from the framework's first hook.
 */
export function setHttpRoute(route: string): void {
  const metadata = getRPCMetadata(context.active());
  if (metadata?.type === RPCType.HTTP) metadata.route = route;
}

const TRACE_HEADERS = ['traceparent', 'tracestate', 'baggage'] as const;
const incomingTraces = new WeakMap<IncomingMessage, SpanContext>();
const traceContext = new W3CTraceContextPropagator();

/**
 * An HTTP server for requests from outside (partners): their `traceparent`, `tracestate` and
 * `baggage` are taken off before the http instrumentation reads them, so each request starts
 * a trace of ours (and no caller's baggage reaches our services); a valid incoming trace
 * context is kept for {@link linkIncomingTrace}. Timeouts as Fastify sets on its own server.
 */
export function createUntrustedTraceServer(
  handler: RequestListener,
  options: {
    keepAliveTimeout?: number;
    requestTimeout?: number;
    connectionTimeout?: number;
    maxRequestsPerSocket?: number;
  },
): http.Server {
  class UntrustedTraceServer extends http.Server {
    override emit(event: string, ...args: unknown[]): boolean {
      if (event === 'request') {
        const request = args[0] as IncomingMessage;
        const incoming = trace.getSpanContext(
          traceContext.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter),
        );
        if (incoming) incomingTraces.set(request, incoming);
        for (const header of TRACE_HEADERS) delete request.headers[header];
      }
      // The instrumented emit: it starts the request's (root) server span.
      return super.emit(event, ...args);
    }
  }
  const server = new UntrustedTraceServer(handler);
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
  if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout);
  if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
  return server;
}

/** Link the request's server span to the trace context the caller sent, if it sent one. */
export function linkIncomingTrace(request: IncomingMessage): void {
  const incoming = incomingTraces.get(request);
  if (incoming) trace.getActiveSpan()?.addLink({ context: incoming });
}

/** Whether the standard OTEL_* variables ask for spans to be exported. */
function exportRequested(env: NodeJS.ProcessEnv): boolean {
  const exporters = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporters) return exporters !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export interface Tracing {
  shutdown(): Promise<void>;
}

let started: Tracing | undefined;

/**
 * Install the process's tracer provider (once; later calls get the first one), so every
 * request and message has trace and span ids that propagate over HTTP, NATS and JetStream
 * and that log lines carry.
 *
 * - Exporting (OTEL_TRACES_EXPORTER, or an OTLP endpoint, set): the SDK builds the exporters
 *   from the OTEL_* variables and samples per OTEL_TRACES_SAMPLER (default: parent-based,
 *   always on); OTEL_SERVICE_NAME defaults to `service`.
 * - Not exporting: spans are never recorded (ids only), which costs next to nothing.
 * - `spanProcessors` (tests: an in-memory exporter) replace the exporters from the variables.
 *
 * OTLP metrics and logs stay off: metrics are Prometheus on the ops port, logs are stdout.
 */
export function startTracing(
  service: string,
  options: { spanProcessors?: SpanProcessor[] } = {},
): Tracing {
  if (started) return started;
  registerInstrumentation();
  const exporting = options.spanProcessors !== undefined || exportRequested(process.env);
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ?? service,
    metricReaders: [],
    logRecordProcessors: [],
    ...(exporting
      ? options.spanProcessors
        ? { spanProcessors: options.spanProcessors }
        : {}
      : // The SDK installs a provider only with a processor; this one is never called.
        { spanProcessors: [new NoopSpanProcessor()], sampler: new AlwaysOffSampler() }),
  });
  sdk.start();
  started = {
    shutdown: async () => {
      started = undefined;
      await sdk.shutdown();
    },
  };
  return started;
}
