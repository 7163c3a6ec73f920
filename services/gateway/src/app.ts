import { authInvalidationSubject, webhookStreamWake, type ApiDeprecations } from '@pcp/contracts';
import {
  bindLogContextToSpan,
  createBusClient,
  createUntrustedTraceServer,
  latencyBuckets,
  linkIncomingTrace,
  natsReadiness,
  pingDatabase,
  setHttpRoute,
  startOpsServer,
  withLogContext,
  type Logger,
  type ServiceInstance,
  type ServiceMetrics,
} from '@pcp/service-kit';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { NatsConnection } from 'nats';
import { Histogram } from 'prom-client';
import { registerApi } from './api.js';
import { createLiveEventHub, startLiveEventSource } from './live/live-events.js';
import { consoleRoutes } from './routes/console.routes.js';
import { parseTrustProxy, type GatewayConfig } from './config.js';
import type { GatewayDatabase } from './db/partner.table.js';
import { createAccountReads } from './http/account-reads.js';
import { createApiVersionPins } from './http/api-version-pins.js';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from './http/problem.js';
import { createRateLimiter, type RedisCommands } from './http/rate-limit.js';
import { clientRequestIdOf, requestIdOf } from './http/request-id.js';
import { createRequestRecorder } from './http/request-recorder.js';
import { plainSerializerCompiler, zodValidatorCompiler } from './http/validation.js';
import apiDeprecation from './plugins/api-deprecation.js';
import apiVersion, { apiVersionHeaderPlugin } from './plugins/api-version.js';
import areaAccess from './plugins/area-access.js';
import auth from './plugins/auth.js';
import endUser from './plugins/end-user.js';
import idempotencyKey from './plugins/idempotency-key.js';
import rateLimit from './plugins/rate-limit.js';
import requestContext from './plugins/request-context.js';
import requestLog from './plugins/request-log.js';

export { buildOpenApiDocument } from './api.js';
export { gatewayMigrations, GATEWAY_SCHEMA } from './db/migrations/index.js';
export type { GatewayDatabase } from './db/partner.table.js';
export { gatewayEnvSchema, type GatewayConfig } from './config.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The partner's own X-Request-Id, bounded and printable (request.id is ours). */
    clientRequestId: string | undefined;
  }
}

export interface GatewayDeps {
  readonly nc: NatsConnection;
  readonly db: Kysely<GatewayDatabase>;
  /** A connected node-redis client (rate limits). */
  readonly redis: RedisCommands;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  /** What is deprecated (docs/guide/versioning.md#deprecation); the registry's by default. */
  readonly apiDeprecations?: ApiDeprecations;
  readonly config: Pick<
    GatewayConfig,
    | 'PORT'
    | 'HOST'
    | 'PUBLIC_BASE_URL'
    | 'DOCS_URL'
    | 'BODY_LIMIT_BYTES'
    | 'TRUST_PROXY'
    | 'RATE_LIMIT_READS_PER_MIN'
    | 'RATE_LIMIT_WRITES_PER_MIN'
    | 'RATE_LIMIT_DISCOVERY_PER_MIN'
    | 'REDIS_KEY_PREFIX'
    | 'AUTH_CACHE_TTL_MS'
    | 'AUTH_CACHE_MAX_KEYS'
    | 'AUTH_CACHE_MAX_UNKNOWN_KEYS'
    | 'AUTH_FAILURES_PER_MIN_PER_IP'
    | 'SESSION_IDLE_TIMEOUT_MS'
    | 'SESSION_MAX_AGE_MS'
    | 'SESSIONS_PER_PARTNER'
    | 'SESSION_CACHE_MAX'
    | 'OPS_PORT'
    | 'OPS_HOST'
    | 'NATS_SUBJECT_PREFIX'
    | 'NATS_REQUEST_TIMEOUT_MS'
    | 'PAYMENTS_REQUEST_TIMEOUT_MS'
    | 'ORDERING_PLACE_TIMEOUT_MS'
    | 'CATALOG_VALIDATION_TIMEOUT_MS'
    | 'WEBHOOK_STREAMS_PER_PARTNER'
    | 'WEBHOOK_STREAM_HEARTBEAT_MS'
    | 'LIVE_STREAMS_PER_PARTNER'
    | 'LIVE_STREAM_HEARTBEAT_MS'
    | 'LIVE_STREAM_MAX_QUEUED_BYTES'
    | 'STREAM_MAX_AGE_MS'
    | 'STREAM_RECHECK_INTERVAL_MS'
    | 'REQUEST_LOG_RETENTION_DAYS'
    | 'REQUEST_LOG_MAX_PER_PARTNER'
    | 'REQUEST_LOG_SWEEP_INTERVAL_MS'
    | 'REQUEST_LOG_FLUSH_MS'
    | 'REQUEST_LOG_BUFFER_MAX_ROWS'
    | 'REQUEST_LOG_BUFFER_MAX_ROWS_PER_PARTNER'
  >;
}

export interface GatewayService extends ServiceInstance {
  start(): Promise<void>;
  /**
   * Turn unready (readiness `accepting: false`) and answer every request with `Connection:
   * close`, so balancers take this replica out and keep-alive clients reconnect to another;
   * requests are still served as usual meanwhile. The first step of a shutdown.
   */
  drain(): void;
  /** Stop taking requests and answer those in flight (on the connections already open). */
  stop(): Promise<void>;
  /** False once it drains (readiness `accepting`). */
  serving(): boolean;
  readonly app: FastifyInstance;
  /** The base URL of its ops port (readiness and metrics), once started. */
  opsUrl(): string;
  /** The base URL it listens on, once started. */
  url(): string;
}

/** The HTTP gateway: authentication, rate limits, ProblemDetail, OpenAPI, routes to services. */
export function createGatewayService(deps: GatewayDeps): GatewayService {
  const { config, logger } = deps;
  const publicBaseUrl = config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`;
  const docsUrl = (config.DOCS_URL ?? `${publicBaseUrl}/docs`).replace(/\/$/, '');
  const bus = createBusClient(deps.nc, {
    prefix: config.NATS_SUBJECT_PREFIX,
    timeoutMs: config.NATS_REQUEST_TIMEOUT_MS,
    logger,
    metrics: deps.metrics,
  });
  const httpDuration = new Histogram({
    name: 'pcp_http_request_duration_seconds',
    help: 'Gateway request duration by method, route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: latencyBuckets,
    registers: [deps.metrics.registry],
  });

  const app = Fastify({
    // Typed as Fastify's logger so route helpers accept the instance (pino's type is wider).
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: logger as FastifyBaseLogger,
    // One metrics observation per request instead of two log lines; errors are logged.
    logController: new LogController({ disableRequestLogging: true }),
    // Every line logged for a request carries its request id from the log context (the first
    // onRequest hook): a pino child per request would only add a second id, and with redaction
    // on each child serializes its bindings (about 2 % of the gateway's CPU under load).
    childLoggerFactory: (parent) => parent,
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: parseTrustProxy(config.TRUST_PROXY),
    // A partner's traceparent and baggage are not ours to continue or pass on to other
    // tenants: each request starts our own trace, linked to the partner's.
    serverFactory: (handler, options) => createUntrustedTraceServer(handler, options),
    requestIdHeader: false,
    genReqId: (request) => requestIdOf(request.headers['x-request-id']),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    frameworkErrors: frameworkErrorHandler(docsUrl),
    clientErrorHandler: clientErrorHandler(docsUrl),
    // A request that reaches a closing gateway on an open keep-alive connection is served
    // (with Connection: close), not refused with Fastify's own 503: a balancer may still send
    // one before it notices, and that partner's request must not fail.
    return503OnClosing: false,
  });
  // Every body is JSON (docs/guide/errors.md#invalid-requests): text/plain is 415 like any
  // other type, not a string for the route's schema to refuse with a 400.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(plainSerializerCompiler);
  installErrorHandling(app, docsUrl, logger);

  let draining = false;
  // First hook: the server span gets its route, and every line logged for the request (by
  // any later hook, the handler or onResponse) its request id, partner and trace.
  app.decorateRequest('clientRequestId', undefined);
  app.addHook('onRequest', (request, _reply, done) => {
    setHttpRoute(request.routeOptions.url ?? 'unmatched');
    linkIncomingTrace(request.raw);
    request.clientRequestId = clientRequestIdOf(request.headers['x-request-id']);
    const fields = () => ({
      requestId: request.id,
      clientRequestId: request.clientRequestId,
      partnerId: request.principal?.partnerId,
    });
    bindLogContextToSpan(fields);
    withLogContext(fields, done);
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (draining) reply.header('connection', 'close');
    done();
  });

  const rateLimiter = createRateLimiter({
    redis: deps.redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    logger,
    defaults: {
      reads: config.RATE_LIMIT_READS_PER_MIN,
      writes: config.RATE_LIMIT_WRITES_PER_MIN,
      discovery: config.RATE_LIMIT_DISCOVERY_PER_MIN,
    },
  });
  const recorder = createRequestRecorder({
    db: deps.db,
    logger,
    metrics: deps.metrics,
    flushMs: config.REQUEST_LOG_FLUSH_MS,
    maxBuffered: config.REQUEST_LOG_BUFFER_MAX_ROWS,
    maxBufferedPerTenant: config.REQUEST_LOG_BUFFER_MAX_ROWS_PER_PARTNER,
    retentionDays: config.REQUEST_LOG_RETENTION_DAYS,
    maxPerTenant: config.REQUEST_LOG_MAX_PER_PARTNER,
    sweepIntervalMs: config.REQUEST_LOG_SWEEP_INTERVAL_MS,
  });

  // Then, each reading the route's config: the API key, the rate limit (so every request with
  // a principal spends its budget, refused ones too), the partner's kind and mode, the end
  // user; the Idempotency-Key just before the handler. Each answer of a principal goes to its log.
  // The API version: the header's first (every answer says its version), then, once the
  // partner is known, its pin, the operations the version lacks, and the translation; the
  // deprecation headers of its version and operation.
  void app.register(apiVersionHeaderPlugin);
  void app.register(auth, deps);
  void app.register(rateLimit, { rateLimiter });
  void app.register(apiVersion);
  void app.register(apiDeprecation, {
    docsUrl,
    ...(deps.apiDeprecations ? { deprecations: deps.apiDeprecations } : {}),
  });
  void app.register(areaAccess);
  void app.register(endUser);
  void app.register(idempotencyKey);
  void app.register(requestContext);
  void app.register(requestLog, { recorder });

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpDuration
      .labels(request.method, route, String(reply.statusCode))
      .observe(reply.elapsedTime / 1000);
    if (reply.statusCode >= 500) {
      logger.warn({ requestId: request.id, route, status: reply.statusCode }, 'request failed');
    }
    done();
  });

  const liveEvents = createLiveEventHub(deps.metrics.registry);
  registerApi(app, {
    bus,
    publicBaseUrl,
    docsUrl,
    placeTimeoutMs: config.ORDERING_PLACE_TIMEOUT_MS,
    paymentsTimeoutMs: config.PAYMENTS_REQUEST_TIMEOUT_MS,
    catalogDryRunTimeoutMs: config.CATALOG_VALIDATION_TIMEOUT_MS,
    webhookStreams: {
      wakeups: {
        watch(tenantId, wake) {
          const subject = `${config.NATS_SUBJECT_PREFIX}.${webhookStreamWake.subject(tenantId)}`;
          const subscription = deps.nc.subscribe(subject, { callback: () => wake() });
          return () => subscription.unsubscribe();
        },
      },
      perPartner: config.WEBHOOK_STREAMS_PER_PARTNER,
      heartbeatMs: config.WEBHOOK_STREAM_HEARTBEAT_MS,
    },
    liveEvents: {
      hub: liveEvents,
      perPartner: config.LIVE_STREAMS_PER_PARTNER,
      heartbeatMs: config.LIVE_STREAM_HEARTBEAT_MS,
      maxQueuedBytes: config.LIVE_STREAM_MAX_QUEUED_BYTES,
    },
    accountReads: createAccountReads({ db: deps.db, rateLimiter, docsUrl }),
    apiVersionPins: createApiVersionPins({
      db: deps.db,
      // The admin commands' invalidation message: every replica, this one too (the flush is
      // a round trip, so its own subscription has run by then), forgets the partner's keys.
      async announce(partnerId) {
        try {
          deps.nc.publish(
            authInvalidationSubject(config.NATS_SUBJECT_PREFIX),
            JSON.stringify({ partnerId }),
          );
          await deps.nc.flush();
        } catch (error) {
          // The pin is changed; the gateways' key caches expire after AUTH_CACHE_TTL_MS.
          logger.warn({ err: error, partnerId }, 'an API version change was not announced');
        }
      },
    }),
  });
  // The partner console: static files, not part of the API document.
  void app.register(consoleRoutes);

  let liveSource: Awaited<ReturnType<typeof startLiveEventSource>> | undefined;
  // After the HTTP server closed (its preClose ended the streams): nothing listens any more.
  app.addHook('onClose', async () => {
    await liveSource?.stop();
  });

  let ops: Awaited<ReturnType<typeof startOpsServer>> | undefined;
  // After the HTTP server (Fastify closes it before the onClose hooks), so probes see the drain.
  app.addHook('onClose', async () => {
    await ops?.close();
  });
  let listeningUrl = '';
  return {
    app,
    url: () => listeningUrl,
    opsUrl: () => `http://${config.OPS_HOST}:${ops?.port ?? config.OPS_PORT}`,
    async start() {
      // Before the port opens, so a stream opened at once hears every event after it.
      liveSource = await startLiveEventSource({
        nc: deps.nc,
        prefix: config.NATS_SUBJECT_PREFIX,
        logger,
        hub: liveEvents,
      });
      listeningUrl = await app.listen({ port: config.PORT, host: config.HOST });
      const natsConnected = natsReadiness(deps.nc);
      // Probes and Prometheus on their own port, which the public ingress does not expose.
      ops = await startOpsServer({
        port: config.OPS_PORT,
        host: config.OPS_HOST,
        registry: deps.metrics.registry,
        logger,
        // What the gateway itself needs to serve: NATS and its database. Not the services:
        // one that is down makes its own routes 503 (no responders), not every gateway
        // unready. Not Redis either: rate limits fall back to an in-memory budget meanwhile.
        readiness: async () => ({
          nats: natsConnected(),
          database: await pingDatabase(deps.db),
          accepting: !draining,
        }),
      });
      logger.info(
        { url: listeningUrl, opsPort: ops.port, docs: `${publicBaseUrl}/docs` },
        'gateway listening',
      );
    },
    drain() {
      draining = true;
    },
    serving: () => !draining,
    async stop() {
      draining = true;
      await app.close();
    },
  };
}
