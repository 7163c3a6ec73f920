import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStreamLeases } from '../../src/http/stream-leases.js';

const LEASE_MS = 90_000;

let env: TestEnvironment;

beforeAll(async () => {
  env = await createTestEnvironment();
});

afterAll(async () => {
  await env?.cleanup();
});

/** A replica's leases on the test's Redis, on the clock `now`. */
const replica = (now: () => number = Date.now) =>
  createStreamLeases({
    redis: env.redis,
    keyPrefix: env.redisKeyPrefix,
    leaseMs: LEASE_MS,
    logger: env.logger,
    now,
  });

describe('stream leases', () => {
  it('hold a partner’s cap across replicas, even when they admit at once', async () => {
    const [first, second] = [replica(), replica()];
    const partner = randomUUID();
    const admitted = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        (index % 2 === 0 ? first : second).acquire('live', partner, 3),
      ),
    );
    expect(admitted.filter((release) => release !== null)).toHaveLength(3);
    // Each kind of stream has its own cap; so has each partner.
    expect(await first.acquire('webhook', partner, 3)).not.toBeNull();
    expect(await second.acquire('live', randomUUID(), 3)).not.toBeNull();
    // A released place is free at once, on the other replica too.
    admitted.find((release) => release !== null)!();
    await expect.poll(async () => (await second.acquire('live', partner, 3)) !== null).toBe(true);
  });

  it('free a crashed replica’s places when its leases lapse, and keep a renewed one’s', async () => {
    let clock = Date.now();
    const now = () => clock;
    const crashed = replica(now);
    const alive = replica(now);
    const other = replica(now);
    const partner = randomUUID();
    expect(await crashed.acquire('live', partner, 2)).not.toBeNull();
    expect(await alive.acquire('live', partner, 2)).not.toBeNull();
    expect(await other.acquire('live', partner, 2)).toBeNull();

    clock += LEASE_MS / 2;
    await alive.renew();
    clock += LEASE_MS / 2 + 1;
    // The crashed replica renewed nothing: its place is free; the renewed one is held.
    expect(await other.acquire('live', partner, 2)).not.toBeNull();
    expect(await other.acquire('live', partner, 2)).toBeNull();
  });

  it('count this replica’s streams while Redis fails', async () => {
    const leases = createStreamLeases({
      redis: { sendCommand: () => Promise.reject(new Error('connection refused')) },
      keyPrefix: env.redisKeyPrefix,
      leaseMs: LEASE_MS,
      logger: env.logger,
    });
    const partner = randomUUID();
    const first = await leases.acquire('live', partner, 2);
    expect(first).not.toBeNull();
    expect(await leases.acquire('live', partner, 2)).not.toBeNull();
    expect(await leases.acquire('live', partner, 2)).toBeNull();
    first!();
    expect(await leases.acquire('live', partner, 2)).not.toBeNull();
  });
});
