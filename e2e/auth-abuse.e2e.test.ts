import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '../test-support/environment.js';
import { startPlatform, type TestPlatform } from '../test-support/platform.js';
import { call } from './http.js';

let env: TestEnvironment;
let platform: TestPlatform;
let partner: { partnerId: string; apiKey: string };

const FAILURES_PER_MINUTE = 10;

beforeAll(async () => {
  env = await createTestEnvironment();
  // Client addresses come from X-Forwarded-For, as behind the production ingress.
  platform = await startPlatform(env, {
    TRUST_PROXY: 'true',
    AUTH_FAILURES_PER_MIN_PER_IP: String(FAILURES_PER_MINUTE),
  });
  partner = await platform.newPartner('commerce');
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

const madeUpKey = () =>
  `pcp_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
const listStores = (from: string, apiKey?: string) =>
  call(platform.baseUrl, 'GET', '/v1/commerce/stores', {
    ...(apiKey ? { apiKey } : {}),
    headers: { 'x-forwarded-for': from },
  });

describe('failed authentications are limited per client address', () => {
  it('refuses an address that keeps sending made-up keys, and no one else', async () => {
    const attacker = '203.0.113.5';
    // The partner's key, verified once from its own address, is remembered.
    expect((await listStores('198.51.100.7', partner.apiKey)).status).toBe(200);

    for (let n = 0; n < FAILURES_PER_MINUTE; n++) {
      expect((await listStores(attacker, madeUpKey())).status).toBe(401);
    }
    const refused = await listStores(attacker, madeUpKey());
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ errorCode: 'RATE_LIMITED', retryable: true });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Without any key, the same.
    expect((await listStores(attacker)).status).toBe(429);

    // Other addresses are not affected, nor a verified key sent from the flooded address.
    expect((await listStores('198.51.100.7', partner.apiKey)).status).toBe(200);
    expect((await listStores('198.51.100.8', madeUpKey())).status).toBe(401);
    expect((await listStores(attacker, partner.apiKey)).status).toBe(200);
  });
});
