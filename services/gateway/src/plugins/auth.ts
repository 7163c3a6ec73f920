import { authInvalidationSubject, type Session } from '@pcp/contracts';
import { AppError, type Logger, type ServiceMetrics } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type { NatsConnection } from 'nats';
import { Counter } from 'prom-client';
import { bearerToken } from '../auth/api-key.js';
import { createAuthenticator, type Principal } from '../auth/authenticator.js';
import { createFailedAuthLimiter } from '../auth/failed-auth-limiter.js';
import { sessionTokenFrom } from '../auth/session-cookie.js';
import { createSessionStore, csrfTokenMatches, type SessionStore } from '../auth/session-store.js';
import type { GatewayConfig } from '../config.js';
import { findActiveKey } from '../db/partner.repository.js';
import type { GatewayDatabase } from '../db/partner.table.js';
import type { RedisCommands } from '../http/rate-limit.js';
import { createStreamLeases } from '../http/stream-leases.js';
import { createStreamRegistry, type StreamRegistry } from '../http/stream-registry.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which kind of partner may call the route; absent for public routes (health, docs). */
    area?: 'commerce' | 'distribution';
    /**
     * The sandbox's operations (docs/guide/sandbox.md#test-helpers): a live key gets 403
     * FORBIDDEN. The OpenAPI document marks them too.
     */
    testOnly?: true;
    /**
     * The console session routes (docs/guide/authentication.md#console-sessions): `sign-in`
     * authenticates the API key in its body; `current` needs the session cookie.
     */
    session?: 'sign-in' | 'current';
  }
  interface FastifyRequest {
    /** The authenticated partner; null on public routes. */
    principal: Principal | null;
    /** The console session the request came with (and its token), when it came with one. */
    consoleSession: { readonly token: string; readonly session: Session } | null;
  }
  interface FastifyInstance {
    /** Console sessions: what the session routes make and end. */
    readonly consoleSessions: SessionStore;
    /** The open event streams, each ended when its authority ends. */
    readonly streamRegistry: StreamRegistry;
  }
}

/** Methods that change something: by cookie, they need the session's X-CSRF-Token. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface AuthOptions {
  readonly db: Kysely<GatewayDatabase>;
  /** A connected node-redis client (the failed-authentication budget, the stream caps). */
  readonly redis: RedisCommands;
  /** Admin changes arrive on it (authInvalidationSubject). */
  readonly nc: NatsConnection;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly config: Pick<
    GatewayConfig,
    | 'AUTH_CACHE_TTL_MS'
    | 'AUTH_CACHE_MAX_KEYS'
    | 'AUTH_CACHE_MAX_UNKNOWN_KEYS'
    | 'AUTH_FAILURES_PER_MIN_PER_IP'
    | 'SESSION_IDLE_TIMEOUT_MS'
    | 'SESSION_MAX_AGE_MS'
    | 'SESSIONS_PER_PARTNER'
    | 'SESSION_CACHE_MAX'
    | 'STREAM_MAX_AGE_MS'
    | 'STREAM_RECHECK_INTERVAL_MS'
    | 'REDIS_KEY_PREFIX'
    | 'NATS_SUBJECT_PREFIX'
  >;
}

/**
 * API keys: a route with an `area`, a test helper (and any unknown route under /v1) needs a
 * valid key (of a partner of that kind), or, without an Authorization header, a console
 * session made from one; `request.principal` is who called. Failed attempts count against the caller's address.
 */
const auth: FastifyPluginAsync<AuthOptions> = async (
  app,
  { db, redis, nc, logger, config, metrics },
) => {
  const keyLookups = new Counter({
    name: 'pcp_gateway_key_lookups_total',
    help: 'API key lookups that reached the database, by whether the key id was found',
    labelNames: ['found'],
    registers: [metrics.registry],
  });
  const authenticator = createAuthenticator({
    findKey: async (keyId) => {
      const key = await findActiveKey(db, keyId);
      keyLookups.labels(String(key !== undefined)).inc();
      return key;
    },
    ttlMs: config.AUTH_CACHE_TTL_MS,
    maxKeys: config.AUTH_CACHE_MAX_KEYS,
    maxUnknownKeys: config.AUTH_CACHE_MAX_UNKNOWN_KEYS,
  });
  const failedAuthentications = createFailedAuthLimiter({
    redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    failuresPerMinute: config.AUTH_FAILURES_PER_MIN_PER_IP,
    logger,
  });

  const invalidationSubject = authInvalidationSubject(config.NATS_SUBJECT_PREFIX);
  const sessions = createSessionStore({
    db,
    authenticator,
    idleMs: config.SESSION_IDLE_TIMEOUT_MS,
    maxAgeMs: config.SESSION_MAX_AGE_MS,
    perTenant: config.SESSIONS_PER_PARTNER,
    cacheTtlMs: config.AUTH_CACHE_TTL_MS,
    cacheMax: config.SESSION_CACHE_MAX,
    announceEnded: (ids) => nc.publish(invalidationSubject, JSON.stringify({ sessions: ids })),
  });
  app.decorate('consoleSessions', sessions);
  const streams = createStreamRegistry({
    leases: createStreamLeases({
      redis,
      keyPrefix: config.REDIS_KEY_PREFIX,
      // A replica renews its leases at every re-check: three missed, and a place is free.
      leaseMs: 3 * config.STREAM_RECHECK_INTERVAL_MS,
      logger,
    }),
    authenticator,
    sessions,
    nc,
    subjectPrefix: config.NATS_SUBJECT_PREFIX,
    maxAgeMs: config.STREAM_MAX_AGE_MS,
    recheckMs: config.STREAM_RECHECK_INTERVAL_MS,
    logger,
  });
  app.decorate('streamRegistry', streams);

  // Not a queue group: every replica must forget the key (and the sessions), and end the
  // streams opened with them.
  const invalidations = nc.subscribe(invalidationSubject, {
    callback: (error, msg) => {
      if (error) return;
      try {
        const target = parseInvalidation(msg.json());
        authenticator.invalidate(target);
        sessions.invalidate(target);
        streams.invalidate(target);
      } catch {
        logger.warn('ignored a malformed auth invalidation message');
      }
    },
  });
  app.addHook('onClose', () => {
    invalidations.unsubscribe();
    streams.close();
  });

  app.decorateRequest('principal', null);
  app.decorateRequest('consoleSession', null);

  async function refuse(request: FastifyRequest, detail: string): Promise<never> {
    await failedAuthentications.recordFailure(request.ip);
    throw new AppError('UNAUTHORIZED', detail);
  }

  async function byKey(
    request: FastifyRequest,
    apiKey: string | null,
    refusal = 'Send a valid API key as Authorization: Bearer <key>',
  ): Promise<Principal> {
    // A key verified recently costs no I/O and passes even from an address over its failure
    // budget. Anything else from such an address is refused before its key is looked up;
    // every 401 (no key, a malformed one, an unknown or wrong one) counts against it.
    const recent = apiKey ? authenticator.recentlyVerified(apiKey) : undefined;
    if (recent) return recent;
    await failedAuthentications.ensureAllowed(request.ip);
    let principal: Principal | null = null;
    try {
      principal = apiKey ? await authenticator.authenticate(apiKey) : null;
    } catch (error) {
      logger.error({ err: error }, 'key lookup failed');
      throw new AppError('SERVICE_UNAVAILABLE', 'Authentication is unavailable; retry later');
    }
    return principal ?? refuse(request, refusal);
  }

  async function bySession(request: FastifyRequest, token: string): Promise<Principal> {
    // As a recently verified key: a remembered session costs no session read.
    if (!sessions.remembers(token)) await failedAuthentications.ensureAllowed(request.ip);
    let active: Awaited<ReturnType<SessionStore['resolve']>>;
    try {
      active = await sessions.resolve(token);
    } catch (error) {
      logger.error({ err: error }, 'session lookup failed');
      throw new AppError('SERVICE_UNAVAILABLE', 'Authentication is unavailable; retry later');
    }
    if (!active) return refuse(request, 'The console session has ended: sign in again');
    // SameSite=Strict keeps the cookie off other sites' requests; these checks hold even
    // where a browser sends it anyway.
    if (request.headers['sec-fetch-site'] === 'cross-site') {
      throw new AppError('CSRF_REJECTED', 'A console session is not usable from another site');
    }
    if (
      !SAFE_METHODS.has(request.method) &&
      !csrfTokenMatches(token, request.headers['x-csrf-token'])
    ) {
      throw new AppError('CSRF_REJECTED', "Send the session's csrfToken as X-CSRF-Token");
    }
    request.consoleSession = { token, session: active.session };
    return active.principal;
  }

  app.addHook('onRequest', async (request) => {
    const { area, testOnly, session } = request.routeOptions.config;
    // Sign-in authenticates the key in its body, once the body is read (below).
    if (session === 'sign-in') return;
    // Unknown routes under /v1 still demand a key, so the API's shape is not probeable.
    const needsKey =
      area !== undefined || session !== undefined || /^\/v1(\/|$|\?)/.test(request.url);
    if (!needsKey) return;

    const { authorization } = request.headers;
    // The partner's operations (an area, or the test helpers, which have none) and the
    // session routes take the console's cookie, as the guide says every /v1 operation does.
    const byCookie = area !== undefined || testOnly === true || session !== undefined;
    const token =
      authorization === undefined && byCookie
        ? sessionTokenFrom(request.headers.cookie)
        : undefined;
    let principal: Principal;
    if (token !== undefined) principal = await bySession(request, token);
    else if (session === 'current') {
      principal = await refuse(request, 'Sign in first: this needs the console session cookie');
    } else principal = await byKey(request, bearerToken(authorization));
    // The route's kind and mode are checked after the rate limit (plugins/area-access.ts).
    request.principal = principal;
  });

  // Sign-in's key is in its body, read and validated by now (a malformed body is a 400).
  app.addHook('preHandler', async (request) => {
    if (request.routeOptions.config.session !== 'sign-in') return;
    const { apiKey } = request.body as { apiKey: string };
    request.principal = await byKey(request, apiKey, 'Send a valid, active API key as apiKey');
  });
};

/** An invalidation message: a partner, a key, or sessions (hex token hashes) to forget. */
function parseInvalidation(message: unknown): {
  partnerId?: string;
  keyId?: string;
  sessions?: string[];
} {
  const { partnerId, keyId, sessions } = (message ?? {}) as Record<string, unknown>;
  return {
    ...(typeof partnerId === 'string' ? { partnerId } : {}),
    ...(typeof keyId === 'string' ? { keyId } : {}),
    ...(Array.isArray(sessions)
      ? { sessions: sessions.filter((id): id is string => typeof id === 'string').slice(0, 1_000) }
      : {}),
  };
}

export default fp(auth, { name: 'auth' });
