import { AppError, type Logger } from '@pcp/service-kit';
import { isIPv4, isIPv6 } from 'node:net';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';

const WINDOW_SECONDS = 60;
/** Longer than any address in text; anything else is cut to this. */
const MAX_ADDRESS_LENGTH = 64;

/**
 * Failed authentications (401s) per client address over a one-minute window, in Redis so
 * every replica counts the same failures. An address over its budget is refused before any
 * key is looked up, so made-up keys cannot keep the partners' database busy. If Redis
 * fails, an in-process limiter with the same budget takes over.
 */
export function createFailedAuthLimiter(options: {
  /** A connected node-redis client. */
  redis: object;
  keyPrefix: string;
  failuresPerMinute: number;
  logger: Logger;
}) {
  const limit = options.failuresPerMinute;
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    useRedisPackage: true,
    keyPrefix: `${options.keyPrefix}rl:auth-failures`,
    points: limit,
    duration: WINDOW_SECONDS,
    // Reads go in a MULTI, which node-redis queues while disconnected: ask memory instead.
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory({ points: limit, duration: WINDOW_SECONDS }),
  });
  return {
    /** Throws RATE_LIMITED when the address has failed authentication too often lately. */
    async ensureAllowed(ip: string): Promise<void> {
      const failures = await limiter.get(clientAddressKey(ip));
      if (failures && failures.consumedPoints >= limit) {
        throw new AppError(
          'RATE_LIMITED',
          'Too many requests with a missing or invalid API key from this address',
          { retryAfterSeconds: Math.max(1, Math.ceil(failures.msBeforeNext / 1000)) },
        );
      }
    },
    /** Count one failed authentication of the address. */
    async recordFailure(ip: string): Promise<void> {
      try {
        await limiter.penalty(clientAddressKey(ip), 1);
      } catch (error) {
        options.logger.warn({ err: error }, 'could not count a failed authentication');
      }
    },
  };
}

/**
 * What failures are counted against: an IPv4 address (also when IPv4-mapped), or an IPv6
 * address's /64, since one subscriber holds a whole /64 and could otherwise rotate through
 * it for a fresh budget per request.
 */
export function clientAddressKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip)?.[1];
  if (mapped && isIPv4(mapped)) return mapped;
  if (isIPv4(ip)) return ip;
  const address = ip.split('%')[0] ?? '';
  if (!isIPv6(address)) return ip.slice(0, MAX_ADDRESS_LENGTH);
  // 16-bit groups; an embedded IPv4 address fills the last two.
  const groups = (part: string) =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group]));
  const [head = '', tail] = address.split('::');
  const leading = groups(head);
  const trailing = tail === undefined ? [] : groups(tail);
  const full = [
    ...leading,
    ...Array<string>(8 - leading.length - trailing.length).fill('0'),
    ...trailing,
  ];
  return `${full
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
