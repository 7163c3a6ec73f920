import { AppError } from '@pcp/service-kit';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter, type RateLimitDecision } from '../../src/http/rate-limit.js';

let env: TestEnvironment;
/** The commands the limiter sent, by name. */
const sent: string[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
});

afterAll(async () => {
  await env?.cleanup();
});

function limiter() {
  return createRateLimiter({
    redis: {
      sendCommand: (args) => {
        sent.push(args[0]!);
        return env.redis.sendCommand(args);
      },
    },
    keyPrefix: env.redisKeyPrefix,
    defaults: { reads: 7, writes: 100, discovery: 100 },
    logger: env.logger,
  });
}

/** The decision of one consume, allowed or refused. */
async function outcome(
  rateLimiter: ReturnType<typeof limiter>,
  partnerId: string,
): Promise<{ allowed: boolean; decision: RateLimitDecision }> {
  try {
    return { allowed: true, decision: await rateLimiter.consume(partnerId, 'reads', {}) };
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'RATE_LIMITED') throw error;
    return {
      allowed: false,
      decision: (error as AppError & { rateLimit: RateLimitDecision }).rateLimit,
    };
  }
}

describe('the partner rate limiter', () => {
  it('allows exactly the limit of a concurrent burst, each with its own remaining count, in one Redis call', async () => {
    const rateLimiter = limiter();
    const partnerId = randomUUID();
    sent.length = 0;
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => outcome(rateLimiter, partnerId)),
    );

    expect(sent).toEqual(['EVALSHA']);
    const allowed = burst.filter((result) => result.allowed);
    expect(allowed).toHaveLength(7);
    expect(allowed.map((result) => result.decision.remaining).sort()).toEqual([
      0, 1, 2, 3, 4, 5, 6,
    ]);
    for (const { decision } of burst) {
      expect(decision.limit).toBe(7);
      expect(decision.resetSeconds).toBeGreaterThanOrEqual(59);
      expect(decision.resetSeconds).toBeLessThanOrEqual(60);
    }
    expect(
      burst.filter((result) => !result.allowed).map((result) => result.decision.remaining),
    ).toEqual(Array(13).fill(0));
    // The next turn's consume sees the burst's count.
    expect((await outcome(rateLimiter, partnerId)).allowed).toBe(false);
  });

  it('counts each partner on its own', async () => {
    const rateLimiter = limiter();
    const [first, second] = [randomUUID(), randomUUID()];
    const burst = await Promise.all([
      ...Array.from({ length: 8 }, () => outcome(rateLimiter, first)),
      outcome(rateLimiter, second),
    ]);
    expect(burst.filter((result) => result.allowed)).toHaveLength(8);
    expect(burst.at(-1)).toMatchObject({ allowed: true, decision: { remaining: 6 } });
  });

  it('keeps counting after Redis forgets its scripts (a restart or SCRIPT FLUSH)', async () => {
    const rateLimiter = limiter();
    const partnerId = randomUUID();
    expect((await outcome(rateLimiter, partnerId)).decision.remaining).toBe(6);
    await env.redis.scriptFlush();
    sent.length = 0;
    expect((await outcome(rateLimiter, partnerId)).decision.remaining).toBe(5);
    expect(sent).toEqual(['EVALSHA', 'EVAL']);
    // Loaded again by the EVAL: back to the SHA alone.
    sent.length = 0;
    expect((await outcome(rateLimiter, partnerId)).decision.remaining).toBe(4);
    expect(sent).toEqual(['EVALSHA']);
  });
});
