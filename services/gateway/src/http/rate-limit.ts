import { AppError, type Logger } from '@pcp/service-kit';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateClass, RateLimitOverrides } from '../db/partner.table.js';

export interface RateLimitDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const WINDOW_SECONDS = 60;

/**
 * Per-partner, per-class limits over a one-minute window kept in Redis, so every gateway
 * replica counts against the same budget. If Redis fails, an in-process limiter with the
 * same budget takes over rather than letting traffic through unlimited.
 */
export function createRateLimiter(options: {
  /** A connected node-redis client. */
  redis: object;
  keyPrefix: string;
  defaults: Record<RateClass, number>;
  logger: Logger;
}) {
  const limiters = new Map<string, RateLimiterRedis>();

  function limiterFor(rateClass: RateClass, points: number): RateLimiterRedis {
    const name = `${rateClass}:${points}`;
    let limiter = limiters.get(name);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: options.redis,
        useRedisPackage: true,
        keyPrefix: `${options.keyPrefix}rl:${rateClass}`,
        points,
        duration: WINDOW_SECONDS,
        insuranceLimiter: new RateLimiterMemory({ points, duration: WINDOW_SECONDS }),
      });
      limiters.set(name, limiter);
    }
    return limiter;
  }

  return {
    /** Count one request; throws RATE_LIMITED (with the decision) when over the limit. */
    async consume(
      partnerId: string,
      rateClass: RateClass,
      overrides: RateLimitOverrides,
    ): Promise<RateLimitDecision> {
      const limit = overrides[rateClass] ?? options.defaults[rateClass];
      try {
        const result = await limiterFor(rateClass, limit).consume(partnerId);
        return decision(limit, result);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          const denied = decision(limit, rejection);
          throw Object.assign(
            new AppError(
              'RATE_LIMITED',
              `Rate limit of ${limit} ${rateClass} per minute exceeded`,
              {
                retryAfterSeconds: Math.max(1, denied.resetSeconds),
              },
            ),
            { rateLimit: denied },
          );
        }
        options.logger.error({ err: rejection }, 'rate limiter failed');
        throw rejection;
      }
    },
  };
}

function decision(limit: number, result: RateLimiterRes): RateLimitDecision {
  return {
    limit,
    remaining: Math.max(0, limit - result.consumedPoints),
    resetSeconds: Math.ceil(result.msBeforeNext / 1000),
  };
}
export type RateLimiter = ReturnType<typeof createRateLimiter>;
