import { authInvalidationSubject } from '@pcp/contracts';
import { AppError, type Logger, type ServiceMetrics } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type { NatsConnection } from 'nats';
import { Counter } from 'prom-client';
import { bearerToken } from '../auth/api-key.js';
import { createAuthenticator, type Principal } from '../auth/authenticator.js';
import { createFailedAuthLimiter } from '../auth/failed-auth-limiter.js';
import type { GatewayConfig } from '../config.js';
import { findActiveKey } from '../db/partner.repository.js';
import type { GatewayDatabase } from '../db/partner.table.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which kind of partner may call the route; absent for public routes (health, docs). */
    area?: 'commerce' | 'distribution';
    /**
     * The sandbox's operations (docs/guide/sandbox.md#test-helpers): a live key gets 403
     * FORBIDDEN. The OpenAPI document marks them too.
     */
    testOnly?: true;
  }
  interface FastifyRequest {
    /** The authenticated partner; null on public routes. */
    principal: Principal | null;
  }
}

export interface AuthOptions {
  readonly db: Kysely<GatewayDatabase>;
  /** A connected node-redis client (the failed-authentication budget). */
  readonly redis: object;
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
    | 'REDIS_KEY_PREFIX'
    | 'NATS_SUBJECT_PREFIX'
  >;
}

/**
 * API keys: a route with an `area` (and any unknown route under /v1) needs a valid key of a
 * partner of that kind; `request.principal` is who called. Failed attempts count against the
 * caller's address.
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

  // Not a queue group: every replica must forget the key.
  const invalidations = nc.subscribe(authInvalidationSubject(config.NATS_SUBJECT_PREFIX), {
    callback: (error, msg) => {
      if (error) return;
      try {
        authenticator.invalidate(msg.json<{ partnerId?: string; keyId?: string }>());
      } catch {
        logger.warn('ignored a malformed auth invalidation message');
      }
    },
  });
  app.addHook('onClose', () => {
    invalidations.unsubscribe();
  });

  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
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
    if (request.routeOptions.config.testOnly && principal.mode !== 'test') {
      throw new AppError('FORBIDDEN', 'This endpoint is for test keys (pcp_test_…) only');
    }
  });
};

export default fp(auth, { name: 'auth' });
