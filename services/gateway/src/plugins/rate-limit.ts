import { AppError } from '@pcp/service-kit';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Principal } from '../auth/authenticator.js';
import type { RateClass } from '../db/partner.table.js';
import type { RateLimitDecision, RateLimiter } from '../http/rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The partner's budget the route counts against; absent, an authenticated request counts
     * as a read (GET, HEAD, OPTIONS) or a write.
     */
    rateClass?: RateClass;
  }
}

export interface RateLimitOptions {
  readonly rateLimiter: RateLimiter;
}

/** Methods that read: a request of no class of the caller's counts as a read or a write. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The budget a request spends: its route's `rateClass` when the caller may call the route;
 * otherwise (an unknown path, the other kind's route, a live key on a test helper) `reads`
 * for GET, HEAD and OPTIONS and `writes` for the rest, budgets every kind of partner has.
 */
function budgetOf(request: FastifyRequest, principal: Principal): RateClass {
  const { rateClass, area, testOnly } = request.routeOptions.config;
  const callable = (!area || area === principal.kind) && (!testOnly || principal.mode === 'test');
  if (rateClass && callable) return rateClass;
  return READ_METHODS.has(request.method) ? 'reads' : 'writes';
}

/**
 * Every request with a principal counts against the partner's budget (docs/guide/
 * authentication.md#rate-limits), those refused after authentication (403, 404, 400) too:
 * this runs right after the auth plugin, before any other check can refuse the request.
 */
const rateLimit: FastifyPluginAsync<RateLimitOptions> = async (app, { rateLimiter }) => {
  const limit = async (request: FastifyRequest, reply: FastifyReply) => {
    const { principal } = request;
    if (!principal) return;
    const rateClass = budgetOf(request, principal);
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
