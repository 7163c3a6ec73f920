import { AppError, type Logger } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { GatewayConfig } from '../config.js';
import type { RateClass } from '../db/partner.table.js';
import {
  createRateLimiter,
  type RateLimitDecision,
  type RedisCommands,
} from '../http/rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The partner's budget the route counts against; absent for unlimited routes. */
    rateClass?: RateClass;
  }
}

export interface RateLimitOptions {
  /** A connected node-redis client. */
  readonly redis: RedisCommands;
  readonly logger: Logger;
  readonly config: Pick<
    GatewayConfig,
    | 'REDIS_KEY_PREFIX'
    | 'RATE_LIMIT_READS_PER_MIN'
    | 'RATE_LIMIT_WRITES_PER_MIN'
    | 'RATE_LIMIT_DISCOVERY_PER_MIN'
  >;
}

/** A route's `rateClass` counts each authenticated request against the partner's budget. */
const rateLimit: FastifyPluginAsync<RateLimitOptions> = async (app, { redis, logger, config }) => {
  const rateLimiter = createRateLimiter({
    redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    logger,
    defaults: {
      reads: config.RATE_LIMIT_READS_PER_MIN,
      writes: config.RATE_LIMIT_WRITES_PER_MIN,
      discovery: config.RATE_LIMIT_DISCOVERY_PER_MIN,
    },
  });
  const limit = async (request: FastifyRequest, reply: FastifyReply) => {
    const { principal } = request;
    const rateClass = request.routeOptions.config.rateClass;
    if (!rateClass || !principal) return;
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
  };
  // Sign-in learns its partner from its body's key, just before its handler.
  const signsIn = (request: FastifyRequest) => request.routeOptions.config.session === 'sign-in';
  app.addHook('onRequest', async (request, reply) => {
    if (!signsIn(request)) await limit(request, reply);
  });
  app.addHook('preHandler', async (request, reply) => {
    if (signsIn(request)) await limit(request, reply);
  });
};

function setRateLimitHeaders(reply: FastifyReply, decision: RateLimitDecision) {
  reply.header('x-ratelimit-limit', String(decision.limit));
  reply.header('x-ratelimit-remaining', String(decision.remaining));
  reply.header('x-ratelimit-reset', String(decision.resetSeconds));
}

export default fp(rateLimit, { name: 'rate-limit', dependencies: ['auth'] });
