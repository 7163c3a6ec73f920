import {
  AppError,
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
  type RequestContext,
  type ServiceMetrics,
} from '@pcp/service-kit';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
} from 'fastify';
import type { Kysely } from 'kysely';
import type { NatsConnection, Subscription } from 'nats';
import { randomUUID } from 'node:crypto';
import { Counter, Histogram } from 'prom-client';
import { bearerToken } from './auth/api-key.js';
import { createAuthenticator, type Principal } from './auth/authenticator.js';
import { createFailedAuthLimiter } from './auth/failed-auth-limiter.js';
import { registerApi } from './api.js';
import { parseTrustProxy, type GatewayConfig } from './config.js';
import { findActiveKey } from './db/partner.repository.js';
import type { GatewayDatabase } from './db/partner.table.js';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from './http/problem.js';
import { createRateLimiter, type RateLimitDecision } from './http/rate-limit.js';
import { plainSerializerCompiler, zodValidatorCompiler } from './http/validation.js';
import { registerDocsRoutes } from './routes/docs.routes.js';
import './routes/route-config.js';

export { buildOpenApiDocument } from './api.js';
export { gatewayMigrations, GATEWAY_SCHEMA } from './db/migrations/index.js';
export type { GatewayDatabase } from './db/partner.table.js';
export { gatewayEnvSchema, type GatewayConfig } from './config.js';

/** Subject on which admin changes tell every gateway replica to forget cached keys. */
export const authInvalidationSubject = (prefix: string) => `${prefix}.gateway.v1.auth.invalidate`;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    endUserId: string | undefined;
  }
}

export interface GatewayDeps {
  readonly nc: NatsConnection;
  readonly db: Kysely<GatewayDatabase>;
  /** A connected node-redis client (rate limits). */
  readonly redis: object;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
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
    | 'OPS_PORT'
    | 'OPS_HOST'
    | 'NATS_SUBJECT_PREFIX'
    | 'NATS_REQUEST_TIMEOUT_MS'
    | 'PAYMENTS_REQUEST_TIMEOUT_MS'
    | 'ORDERING_PLACE_TIMEOUT_MS'
    | 'CATALOG_VALIDATION_TIMEOUT_MS'
  >;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const END_USER_ID = /^[\x20-\x7e]{1,128}$/;

export interface GatewayService {
  start(): Promise<void>;
  /**
   * Turn unready (readiness `accepting: false`) and answer every request with `Connection:
   * close`, so balancers take this replica out and keep-alive clients reconnect to another;
   * requests are still served as usual meanwhile. The first step of a shutdown.
   */
  drain(): void;
  /** Stop taking requests and answer those in flight (on the connections already open). */
  stop(): Promise<void>;
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
  const keyLookups = new Counter({
    name: 'pcp_gateway_key_lookups_total',
    help: 'API key lookups that reached the database, by whether the key id was found',
    labelNames: ['found'],
    registers: [deps.metrics.registry],
  });
  const authenticator = createAuthenticator({
    findKey: async (keyId) => {
      const key = await findActiveKey(deps.db, keyId);
      keyLookups.labels(String(key !== undefined)).inc();
      return key;
    },
    ttlMs: config.AUTH_CACHE_TTL_MS,
    maxKeys: config.AUTH_CACHE_MAX_KEYS,
    maxUnknownKeys: config.AUTH_CACHE_MAX_UNKNOWN_KEYS,
  });
  const failedAuthentications = createFailedAuthLimiter({
    redis: deps.redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    failuresPerMinute: config.AUTH_FAILURES_PER_MIN_PER_IP,
    logger,
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
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: parseTrustProxy(config.TRUST_PROXY),
    // A partner's traceparent and baggage are not ours to continue or pass on to other
    // tenants: each request starts our own trace, linked to the partner's.
    serverFactory: (handler, options) => createUntrustedTraceServer(handler, options),
    requestIdHeader: false,
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    frameworkErrors: frameworkErrorHandler(docsUrl),
    clientErrorHandler: clientErrorHandler(docsUrl),
    // A request that reaches a closing gateway on an open keep-alive connection is served
    // (with Connection: close), not refused with Fastify's own 503: a balancer may still send
    // one before it notices, and that partner's request must not fail.
    return503OnClosing: false,
  });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(plainSerializerCompiler);
  app.decorateRequest('principal', null);
  app.decorateRequest('endUserId', undefined);
  installErrorHandling(app, docsUrl, logger);

  let draining = false;
  // First hook: the server span gets its route, and every line logged for the request (by
  // any later hook, the handler or onResponse) its request id, partner and trace.
  app.addHook('onRequest', (request, _reply, done) => {
    setHttpRoute(request.routeOptions.url ?? 'unmatched');
    linkIncomingTrace(request.raw);
    const fields = () => ({ requestId: request.id, partnerId: request.principal?.partnerId });
    bindLogContextToSpan(fields);
    withLogContext(fields, done);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (draining) reply.header('connection', 'close');
    const area = request.routeOptions.config.area;
    // Unknown routes under /v1 still demand a key, so the API's shape is not probeable.
    const needsKey = area !== undefined || /^\/v1(\/|$|\?)/.test(request.url);
    if (!needsKey) return;

    const apiKey = bearerToken(request.headers.authorization);
    // A key verified recently costs no I/O and passes even from an address over its failure
    // budget. Anything else from such an address is refused before its key is looked up;
    // every 401 (no key, a malformed one, an unknown or wrong one) counts against it.
    let principal = apiKey ? authenticator.recentlyVerified(apiKey) : undefined;
    if (!principal) {
      await failedAuthentications.ensureAllowed(request.ip);
      try {
        principal = (apiKey && (await authenticator.authenticate(apiKey))) || undefined;
      } catch (error) {
        logger.error({ err: error }, 'key lookup failed');
        throw new AppError('SERVICE_UNAVAILABLE', 'Authentication is unavailable; retry later');
      }
      if (!principal) {
        await failedAuthentications.recordFailure(request.ip);
        throw new AppError('UNAUTHORIZED', 'Send a valid API key as Authorization: Bearer <key>');
      }
    }
    request.principal = principal;
    if (area && principal.kind !== area) {
      throw new AppError('FORBIDDEN', `This endpoint is for ${area} partners`);
    }

    const endUser = request.headers['x-end-user-id'];
    if (endUser !== undefined) {
      if (typeof endUser !== 'string' || !END_USER_ID.test(endUser)) {
        throw new AppError(
          'REQUEST_INVALID',
          'X-End-User-Id must be 1 to 128 printable ASCII characters',
        );
      }
      request.endUserId = endUser;
    } else if (request.routeOptions.config.endUser === 'required') {
      throw new AppError('SESSION_USER_REQUIRED', 'Send the end user as X-End-User-Id');
    }

    const rateClass = request.routeOptions.config.rateClass;
    if (rateClass) {
      let decision: RateLimitDecision;
      try {
        decision = await rateLimiter.consume(principal.partnerId, rateClass, principal.rateLimits);
      } catch (error) {
        if (error instanceof AppError && 'rateLimit' in error) {
          setRateLimitHeaders(reply, error.rateLimit as RateLimitDecision);
        }
        throw error;
      }
      setRateLimitHeaders(reply, decision);
    }
  });

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

  const contextOf = (request: FastifyRequest): RequestContext => ({
    requestId: request.id,
    ...(request.principal
      ? {
          partnerId: request.principal.partnerId,
          partnerKind: request.principal.kind,
          paymentTypes: request.principal.paymentTypes,
        }
      : {}),
    ...(request.endUserId ? { endUserId: request.endUserId } : {}),
    ...(typeof request.headers.traceparent === 'string'
      ? { traceparent: request.headers.traceparent }
      : {}),
    ...(typeof request.headers.tracestate === 'string'
      ? { tracestate: request.headers.tracestate }
      : {}),
  });

  registerApi(app, {
    bus,
    contextOf,
    publicBaseUrl,
    docsUrl,
    placeTimeoutMs: config.ORDERING_PLACE_TIMEOUT_MS,
    paymentsTimeoutMs: config.PAYMENTS_REQUEST_TIMEOUT_MS,
    catalogValidationTimeoutMs: config.CATALOG_VALIDATION_TIMEOUT_MS,
  });
  registerDocsRoutes(app, { docsUrl });

  let invalidations: Subscription | undefined;
  let ops: Awaited<ReturnType<typeof startOpsServer>> | undefined;
  let listeningUrl = '';
  return {
    app,
    url: () => listeningUrl,
    opsUrl: () => `http://${config.OPS_HOST}:${ops?.port ?? config.OPS_PORT}`,
    async start() {
      // Not a queue group: every replica must forget the key.
      invalidations = deps.nc.subscribe(authInvalidationSubject(config.NATS_SUBJECT_PREFIX), {
        callback: (error, msg) => {
          if (error) return;
          try {
            authenticator.invalidate(msg.json<{ partnerId?: string; keyId?: string }>());
          } catch {
            logger.warn('ignored a malformed auth invalidation message');
          }
        },
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
    async stop() {
      draining = true;
      await app.close();
      await ops?.close();
      invalidations?.unsubscribe();
    },
  };
}

function setRateLimitHeaders(
  reply: { header(name: string, value: string): unknown },
  decision: RateLimitDecision,
) {
  reply.header('x-ratelimit-limit', String(decision.limit));
  reply.header('x-ratelimit-remaining', String(decision.remaining));
  reply.header('x-ratelimit-reset', String(decision.resetSeconds));
}
