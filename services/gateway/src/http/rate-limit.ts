import { AppError, type Logger } from '@pcp/service-kit';
import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateClass, RateLimitOverrides } from '../db/partner.table.js';

export interface RateLimitDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** The one command the limiter sends (node-redis's `sendCommand`). */
export interface RedisCommands {
  sendCommand(args: string[]): Promise<unknown>;
}

const WINDOW_SECONDS = 60;

/**
 * Add ARGV[1] to the window's counter, opening the window (with its TTL) if there is none;
 * answers the new count and the milliseconds left. rate-limiter-flexible's script, so the
 * counters keep their meaning across the change.
 */
const CONSUME_SCRIPT = `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}`;
/**
 * A counter's count and milliseconds left (PTTL: -2 without a window). One key per call, so
 * the counters may live on different nodes of a cluster.
 */
const USAGE_SCRIPT = `return {tonumber(redis.call('get', KEYS[1])) or 0, redis.call('pttl', KEYS[1])}`;

interface Script {
  readonly text: string;
  readonly sha: string;
}
const script = (text: string): Script => ({
  text,
  sha: createHash('sha1').update(text).digest('hex'),
});
const CONSUME = script(CONSUME_SCRIPT);
const USAGE = script(USAGE_SCRIPT);

/** One budget's current window, as read without counting against it. */
export interface RateLimitWindow {
  readonly rateClass: RateClass;
  readonly limit: number;
  readonly used: number;
  /** Milliseconds until the window ends; 0 when none is open. */
  readonly msLeft: number;
}

interface Waiter {
  resolve: (result: RateLimiterRes) => void;
  reject: (error: unknown) => void;
}

/** The consumes of one counter (partner and class) and limit waiting for the same Redis call. */
interface Batch {
  readonly key: string;
  readonly limit: number;
  readonly waiters: Waiter[];
}

/**
 * Per-partner, per-class limits over a one-minute window kept in Redis, so every gateway
 * replica counts against the same budget. If Redis fails, an in-process limiter with the
 * same budget takes over rather than letting traffic through unlimited.
 *
 * The consumes of one counter made in the same event-loop turn go to Redis as one `INCRBY n`
 * (by script SHA; the text only after a `NOSCRIPT`): the n requests get the n consecutive
 * counts, so each decision and its headers are what one call per request would have given.
 */
export function createRateLimiter(options: {
  redis: RedisCommands;
  keyPrefix: string;
  defaults: Record<RateClass, number>;
  logger: Logger;
}) {
  const insurance = new Map<string, RateLimiterMemory>();
  const pending = new Map<string, Batch>();

  function insuranceFor(rateClass: RateClass, limit: number): RateLimiterMemory {
    const name = `${rateClass}:${limit}`;
    let limiter = insurance.get(name);
    if (!limiter) {
      limiter = new RateLimiterMemory({
        keyPrefix: name,
        points: limit,
        duration: WINDOW_SECONDS,
      });
      insurance.set(name, limiter);
    }
    return limiter;
  }

  async function evalScript(
    { sha, text }: Script,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    const rest = [String(keys.length), ...keys, ...args];
    try {
      return await options.redis.sendCommand(['EVALSHA', sha, ...rest]);
    } catch (error) {
      // Redis restarted or its scripts were flushed: EVAL loads the script again.
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return options.redis.sendCommand(['EVAL', text, ...rest]);
    }
  }

  const counterKey = (partnerId: string, rateClass: RateClass) =>
    `${options.keyPrefix}rl:${rateClass}:${partnerId}`;
  const limitOf = (rateClass: RateClass, overrides: RateLimitOverrides) =>
    overrides[rateClass] ?? options.defaults[rateClass];

  async function flush(batch: Batch, partnerId: string, rateClass: RateClass): Promise<void> {
    const { waiters, limit } = batch;
    let total: number;
    let msBeforeNext: number;
    try {
      const [consumed, ttl] = (await evalScript(
        CONSUME,
        [batch.key],
        [String(waiters.length), String(WINDOW_SECONDS)],
      )) as [number, number];
      total = consumed;
      msBeforeNext = ttl;
    } catch {
      // The client reports Redis errors itself; fail over to memory as the library did.
      const limiter = insuranceFor(rateClass, limit);
      for (const waiter of waiters) {
        limiter.consume(partnerId).then(waiter.resolve, waiter.reject);
      }
      return;
    }
    waiters.forEach((waiter, i) => {
      const consumed = total - waiters.length + 1 + i;
      const result = new RateLimiterRes(Math.max(0, limit - consumed), msBeforeNext, consumed);
      if (consumed > limit) waiter.reject(result);
      else waiter.resolve(result);
    });
  }

  function count(partnerId: string, rateClass: RateClass, limit: number): Promise<RateLimiterRes> {
    const key = counterKey(partnerId, rateClass);
    const batchKey = `${key} ${limit}`;
    return new Promise((resolve, reject) => {
      let batch = pending.get(batchKey);
      if (!batch) {
        const opened: Batch = { key, limit, waiters: [] };
        batch = opened;
        pending.set(batchKey, opened);
        // After this turn's I/O callbacks, so the requests read in it share the call.
        setImmediate(() => {
          pending.delete(batchKey);
          void flush(opened, partnerId, rateClass);
        });
      }
      batch.waiters.push({ resolve, reject });
    });
  }

  return {
    /** Count one request; throws RATE_LIMITED (with the decision) when over the limit. */
    async consume(
      partnerId: string,
      rateClass: RateClass,
      overrides: RateLimitOverrides,
    ): Promise<RateLimitDecision> {
      const limit = limitOf(rateClass, overrides);
      try {
        return decision(limit, await count(partnerId, rateClass, limit));
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

    /**
     * The current window of each of `rateClasses` for the partner, read from the counters
     * `consume` keeps, counting nothing. Throws SERVICE_UNAVAILABLE when Redis fails: the
     * in-memory budget of a failover is this replica's alone, not the partner's usage.
     */
    async usage(
      partnerId: string,
      rateClasses: readonly RateClass[],
      overrides: RateLimitOverrides,
    ): Promise<RateLimitWindow[]> {
      let read: [number, number][];
      try {
        read = (await Promise.all(
          rateClasses.map((rateClass) => evalScript(USAGE, [counterKey(partnerId, rateClass)], [])),
        )) as [number, number][];
      } catch (error) {
        options.logger.error({ err: error }, 'rate-limit usage read failed');
        throw new AppError('SERVICE_UNAVAILABLE', 'Rate-limit usage is unavailable; retry later');
      }
      return rateClasses.map((rateClass, i) => {
        // PTTL: -2 without a window; -1 for a counter whose expiry the next consume sets.
        const [count, ttl] = read[i] ?? [0, -2];
        return {
          rateClass,
          limit: limitOf(rateClass, overrides),
          used: ttl === -2 ? 0 : count,
          msLeft: ttl === -1 ? WINDOW_SECONDS * 1000 : Math.max(0, ttl),
        };
      });
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
