import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { RateClass } from '../db/partner.table.js';
import type { RateLimitDecision, RateLimiter } from '../http/rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The partner's budget the route counts against; absent for unlimited routes. */
    rateClass?: RateClass;
  }
}

export interface RateLimitOptions {
  readonly rateLimiter: RateLimiter;
}

/** A route's `rateClass` counts each authenticated request against the partner's budget. */
const rateLimit: FastifyPluginAsync<RateLimitOptions> = async (app, { rateLimiter }) => {
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
