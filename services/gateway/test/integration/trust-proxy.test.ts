import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

const FAILURES_PER_MINUTE = 5;

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
const gateways: GatewayService[] = [];

/** A gateway alone (no services behind it) that believes X-Forwarded-For from `trustProxy`. */
async function startGateway(trustProxy: string, name: string) {
  const gateway = createLoneGateway(env, db, {
    REDIS_KEY_PREFIX: `${env.redisKeyPrefix}${name}:`,
    AUTH_FAILURES_PER_MIN_PER_IP: String(FAILURES_PER_MINUTE),
    TRUST_PROXY: trustProxy,
  });
  gateways.push(gateway);
  await gateway.start();
  return gateway;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
});

afterAll(async () => {
  for (const gateway of gateways) await gateway.stop();
  await db?.destroy();
  await env?.cleanup();
});

const madeUpKey = () =>
  `pcp_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;

/** Statuses of failed authentications, each claiming another client in X-Forwarded-For. */
async function rotatedFailures(gateway: GatewayService, count: number) {
  const statuses: number[] = [];
  for (let n = 0; n < count; n++) {
    const response = await fetch(`${gateway.url()}/v1/commerce/stores`, {
      headers: {
        authorization: `Bearer ${madeUpKey()}`,
        'x-forwarded-for': `203.0.113.${n + 1}`,
      },
    });
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return statuses;
}

describe('TRUST_PROXY and the failed-authentication limiter', () => {
  it('ignores X-Forwarded-For from a source outside the trusted ingress range: rotating it does not escape the limit', async () => {
    // The ingress lives in 192.0.2.0/24; this client connects from 127.0.0.1.
    const gateway = await startGateway('192.0.2.0/24', 'untrusted');
    const statuses = await rotatedFailures(gateway, FAILURES_PER_MINUTE + 2);
    expect(statuses).toEqual([...Array<number>(FAILURES_PER_MINUTE).fill(401), 429, 429]);
  });

  it('counts each client forwarded by the trusted ingress on its own', async () => {
    // The same requests from the ingress's address: each forwarded client has its own count.
    const gateway = await startGateway('127.0.0.1/32', 'trusted');
    const statuses = await rotatedFailures(gateway, FAILURES_PER_MINUTE + 2);
    expect(statuses).toEqual(Array<number>(FAILURES_PER_MINUTE + 2).fill(401));
  });
});
