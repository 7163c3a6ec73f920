import type { Logger } from '@pcp/service-kit';
import { createClient } from 'redis';

/**
 * The client of the rate-limit counters, not yet connected. While Redis is unreachable its
 * commands fail at once instead of queueing until it returns, so the limiters fall back to
 * their in-process budgets and requests do not wait on Redis. That is why Redis is not a
 * readiness condition of the gateway.
 */
export function createRedisClient(url: string, logger: Logger) {
  const redis = createClient({ url, disableOfflineQueue: true });
  // Without a listener a Redis error would crash the process; the client reconnects itself.
  redis.on('error', (error: unknown) => logger.warn({ err: error }, 'redis error'));
  return redis;
}
