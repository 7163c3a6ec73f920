import type { Logger } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import type { RedisCommands } from './rate-limit.js';

/**
 * Drop the lapsed leases of KEYS[1] (a partner's open streams of one kind, scored by lease
 * end), then add ARGV[4] with its lease end ARGV[3] unless ARGV[2] are already held. Answers 1
 * when added. One script, so two replicas admitting at once cannot both take the last place.
 */
const ADMIT_SCRIPT = `redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[1])
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('zadd', KEYS[1], ARGV[3], ARGV[4])
redis.call('pexpire', KEYS[1], ARGV[5])
return 1`;

/** The kinds of stream, each with a cap of its own. */
export type StreamFamily = 'live' | 'webhook';

/**
 * A partner's open streams of one kind, counted across its modes and every gateway replica:
 * a Redis sorted set of stream ids per partner, each scored by the end of a lease its replica
 * renews while the stream is open (`renew`), so the places of a crashed replica's streams
 * come free when their leases lapse. While Redis fails, each replica counts its own streams.
 */
export function createStreamLeases(options: {
  readonly redis: RedisCommands;
  readonly keyPrefix: string;
  /** How long a lease lasts unrenewed: a few renewal intervals. */
  readonly leaseMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}) {
  const now = options.now ?? Date.now;
  /** The ids this replica holds, by set key: what it renews, and its count without Redis. */
  const held = new Map<string, Set<string>>();
  const keyOf = (family: StreamFamily, accountId: string) =>
    `${options.keyPrefix}streams:${family}:${accountId}`;

  async function admitted(key: string, id: string, cap: number): Promise<boolean> {
    const at = now();
    try {
      const added = await options.redis.sendCommand([
        'EVAL',
        ADMIT_SCRIPT,
        '1',
        key,
        String(at),
        String(cap),
        String(at + options.leaseMs),
        id,
        String(options.leaseMs),
      ]);
      return added === 1;
    } catch (error) {
      options.logger.warn({ err: error }, 'stream leases unavailable; counting this replica’s');
      return (held.get(key)?.size ?? 0) < cap;
    }
  }

  return {
    /**
     * A place for a stream of the partner `accountId`: its release function (idempotent), or
     * null when `cap` streams of that kind are open already.
     */
    async acquire(
      family: StreamFamily,
      accountId: string,
      cap: number,
    ): Promise<(() => void) | null> {
      const key = keyOf(family, accountId);
      const id = randomUUID();
      if (!(await admitted(key, id, cap))) return null;
      const ids = held.get(key) ?? new Set<string>();
      ids.add(id);
      held.set(key, ids);
      let holding = true;
      return () => {
        if (!holding) return;
        holding = false;
        ids.delete(id);
        if (ids.size === 0 && held.get(key) === ids) held.delete(key);
        options.redis.sendCommand(['ZREM', key, id]).catch((error: unknown) => {
          // Its lease lapses on its own.
          options.logger.warn({ err: error }, 'a stream lease was not released');
        });
      };
    },

    /** Extend the leases of every stream open here (those released stay gone: XX). */
    async renew(): Promise<void> {
      const leaseEnd = String(now() + options.leaseMs);
      const failures = await Promise.all(
        [...held].map(async ([key, ids]) => {
          const members = [...ids].flatMap((id) => [leaseEnd, id]);
          try {
            await options.redis.sendCommand(['ZADD', key, 'XX', ...members]);
            await options.redis.sendCommand(['PEXPIRE', key, String(options.leaseMs)]);
            return undefined;
          } catch (error) {
            return error;
          }
        }),
      );
      const failure = failures.find((error) => error !== undefined);
      // Once a round, however many partners: Redis is down for all of them.
      if (failure) options.logger.warn({ err: failure }, 'stream leases were not renewed');
    },
  };
}

export type StreamLeases = ReturnType<typeof createStreamLeases>;
