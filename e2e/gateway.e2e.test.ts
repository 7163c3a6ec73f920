import { authInvalidationSubject } from '@pcp/contracts';
import { revokeKey, setRateLimits } from '@pcp/gateway/admin';
import { loadConfig } from '@pcp/service-kit';
import { gatewayEnvSchema } from '@pcp/gateway';
import { createStoresService } from '@pcp/stores';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { newStoreId, storeProfile } from '@pcp/testing/fixtures';
import { call } from './http.js';

let env: TestEnvironment;
let platform: TestPlatform;
let commerce: { partnerId: string; apiKey: string; keyId: string };
let distribution: { partnerId: string; apiKey: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  // The auth cache is on, as in production: revocation must still reach it. Client
  // addresses come from X-Forwarded-For, as behind the production ingress.
  platform = await startPlatform(env, {
    gatewayEnv: { AUTH_CACHE_TTL_MS: '60000', TRUST_PROXY: 'true' },
  });
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
});

afterAll(async () => {
  await platform?.stop();
  await env?.cleanup();
});

const storesPath = '/v1/commerce/stores';

function expectProblem(
  response: { status: number; headers: Headers; body: Record<string, unknown> },
  status: number,
  errorCode: string,
) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({
    type: expect.stringMatching(new RegExp(`/errors/${errorCode}$`)),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    instance: expect.stringMatching(/^\//),
    requestId: response.headers.get('x-request-id'),
    errorCode,
    errorCategory: expect.any(String),
    retryable: expect.any(Boolean),
  });
  expect(Date.parse(response.body.timestamp as string)).not.toBeNaN();
}

describe('authentication', () => {
  it.each([
    ['no Authorization header', undefined],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['a malformed key', 'Bearer not-a-key'],
    ['an unknown key', `Bearer pcp_0123456789abcdef_${'A'.repeat(43)}`],
    ['a right id with a wrong secret', 'WRONG'],
  ])('answers %s with 401 UNAUTHORIZED and WWW-Authenticate', async (_case, header) => {
    const authorization =
      header === 'WRONG' ? `Bearer pcp_${commerce.keyId}_${'B'.repeat(43)}` : header;
    const response = await call(platform.baseUrl, 'GET', storesPath, {
      headers: authorization ? { authorization } : {},
    });
    expectProblem(response, 401, 'UNAUTHORIZED');
    expect(response.body.errorCategory).toBe('authentication');
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('checks the key before the body: no key and a broken body is still 401', async () => {
    const response = await call(platform.baseUrl, 'PUT', `${storesPath}/${newStoreId()}`, {
      rawBody: '{"broken',
    });
    expectProblem(response, 401, 'UNAUTHORIZED');
  });

  it('demands a key on unknown /v1 routes too, and answers 404 with one', async () => {
    expectProblem(await call(platform.baseUrl, 'GET', '/v1/secret'), 401, 'UNAUTHORIZED');
    expectProblem(
      await call(platform.baseUrl, 'GET', '/v1/secret', { apiKey: commerce.apiKey }),
      404,
      'NOT_FOUND',
    );
  });

  it('keeps each kind of key to its own paths (403 FORBIDDEN)', async () => {
    const onMarketfront = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${newStoreId()}`,
      {
        apiKey: commerce.apiKey,
      },
    );
    expectProblem(onMarketfront, 403, 'FORBIDDEN');
    const onCommerce = await call(platform.baseUrl, 'GET', storesPath, {
      apiKey: distribution.apiKey,
    });
    expectProblem(onCommerce, 403, 'FORBIDDEN');
  });

  it('refuses a revoked key at once, even though the gateway caches keys', async () => {
    const partner = await platform.newPartner('commerce');
    expect(
      (await call(platform.baseUrl, 'GET', storesPath, { apiKey: partner.apiKey })).status,
    ).toBe(200);
    await revokeKey(platform.gatewayDb, partner.keyId);
    // What the admin command announces after a revocation.
    env.nc.publish(
      authInvalidationSubject(env.prefix),
      JSON.stringify({ partnerId: partner.partnerId }),
    );
    await env.nc.flush();
    await expect
      .poll(
        async () =>
          (await call(platform.baseUrl, 'GET', storesPath, { apiKey: partner.apiKey })).status,
      )
      .toBe(401);
  });

  it('rejects a malformed X-End-User-Id', async () => {
    const response = await call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${newStoreId()}`, {
      apiKey: distribution.apiKey,
      headers: { 'x-end-user-id': 'x'.repeat(129) },
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
  });
});

describe('malformed, oversized and hostile input', () => {
  const path = () => `${storesPath}/${newStoreId()}`;

  it('answers invalid JSON with 400 REQUEST_INVALID', async () => {
    for (const rawBody of ['{"name": ', 'null', '[]', '"text"', '{"a":1}{"b":2}']) {
      const response = await call(platform.baseUrl, 'PUT', path(), {
        apiKey: commerce.apiKey,
        rawBody,
      });
      expectProblem(response, 400, 'REQUEST_INVALID');
    }
  });

  it('answers an empty JSON body with 400', async () => {
    const response = await call(platform.baseUrl, 'PUT', path(), {
      apiKey: commerce.apiKey,
      rawBody: '',
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
  });

  it('answers a body over the limit with 413 and loses nothing else', async () => {
    const response = await call(platform.baseUrl, 'PUT', path(), {
      apiKey: commerce.apiKey,
      body: storeProfile({ name: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expectProblem(response, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('answers another media type with 415', async () => {
    const response = await call(platform.baseUrl, 'PUT', path(), {
      apiKey: commerce.apiKey,
      rawBody: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectProblem(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses prototype-pollution keys', async () => {
    for (const rawBody of [
      '{"__proto__": {"admin": true}, "name": "x"}',
      '{"constructor": {"prototype": {"admin": true}}}',
    ]) {
      const response = await call(platform.baseUrl, 'PUT', path(), {
        apiKey: commerce.apiKey,
        rawBody,
      });
      expectProblem(response, 400, 'REQUEST_INVALID');
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('treats wrong types, huge numbers and control characters as validation errors', async () => {
    const response = await call(platform.baseUrl, 'PUT', path(), {
      apiKey: commerce.apiKey,
      body: storeProfile({
        name: 42,
        taxRate: 1e308,
        minimumOrder: -1,
        fulfillmentTypes: 'PICKUP',
        address: 'nowhere',
      }),
    });
    expectProblem(response, 400, 'REQUEST_INVALID');
    const pointers = (response.body.errors as { pointer: string }[]).map((error) => error.pointer);
    expect(pointers).toEqual(
      expect.arrayContaining([
        '/name',
        '/taxRate',
        '/minimumOrder',
        '/fulfillmentTypes',
        '/address',
      ]),
    );
  });

  it('escapes hostile text instead of reflecting it raw', async () => {
    const response = await call(platform.baseUrl, 'GET', '/v1/<script>alert(1)</script>', {
      apiKey: commerce.apiKey,
    });
    expectProblem(response, 404, 'NOT_FOUND');
    expect(response.headers.get('content-type')).not.toContain('html');
  });

  it('answers URLs the router refuses (an over-long segment, broken percent-encoding) as ProblemDetail', async () => {
    const longSegment = await call(
      platform.baseUrl,
      'GET',
      `/v1/commerce/stores/${'a'.repeat(5_000)}`,
      { apiKey: commerce.apiKey },
    );
    expectProblem(longSegment, 404, 'NOT_FOUND');
    expect(longSegment.headers.get('x-request-id')).toBe(longSegment.body.requestId);

    const brokenEncoding = await call(platform.baseUrl, 'GET', '/v1/commerce/stores/%E0%A4%A', {
      apiKey: commerce.apiKey,
    });
    expectProblem(brokenEncoding, 400, 'REQUEST_INVALID');
    expect(brokenEncoding.headers.get('x-request-id')).toBe(brokenEncoding.body.requestId);
  });

  it('keeps an incoming X-Request-Id of its own form and replaces any other', async () => {
    const ours = randomUUID();
    const kept = await call(platform.baseUrl, 'GET', storesPath, {
      apiKey: commerce.apiKey,
      headers: { 'x-request-id': ours },
    });
    expect(kept.headers.get('x-request-id')).toBe(ours);
    for (const hostile of ['partner-trace-123', 'bad id with spaces']) {
      const replaced = await call(platform.baseUrl, 'GET', '/v1/nope', {
        apiKey: commerce.apiKey,
        headers: { 'x-request-id': hostile },
      });
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(replaced.body.requestId).toBe(replaced.headers.get('x-request-id'));
    }
  });
});

describe('rate limits', () => {
  it('counts per partner and class, sends X-RateLimit-* and answers 429 with Retry-After', async () => {
    const partner = await platform.newPartner('commerce');
    await setRateLimits(platform.gatewayDb, partner.partnerId, { reads: 3 });
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 4; i++) {
      last = await call(platform.baseUrl, 'GET', storesPath, { apiKey: partner.apiKey });
      statuses.push(last.status);
      if (i < 3) {
        expect(last.headers.get('x-ratelimit-limit')).toBe('3');
        expect(last.headers.get('x-ratelimit-remaining')).toBe(String(2 - i));
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectProblem(last!, 429, 'RATE_LIMITED');
    expect(last!.body.retryable).toBe(true);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');

    // Writes have their own budget, and other partners are unaffected.
    const write = await call(platform.baseUrl, 'PUT', `${storesPath}/${newStoreId()}`, {
      apiKey: partner.apiKey,
      body: storeProfile(),
    });
    expect(write.status).toBe(201);
    expect(write.headers.get('x-ratelimit-limit')).toBe('100');
    expect(
      (await call(platform.baseUrl, 'GET', storesPath, { apiKey: commerce.apiKey })).status,
    ).toBe(200);
  });
});

describe('failed authentications, limited per client address', () => {
  const { AUTH_FAILURES_PER_MIN_PER_IP: failuresPerMinute } = loadConfig(gatewayEnvSchema, {});
  const madeUpKey = () =>
    `pcp_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
  const listStores = (address: string, authorization?: string) =>
    call(platform.baseUrl, 'GET', storesPath, {
      headers: {
        'x-forwarded-for': address,
        ...(authorization ? { authorization } : {}),
      },
    });
  /** Key lookups that reached the gateway's database, from its ops port. */
  const keyLookups = async () => {
    const metrics = await (await fetch(`${platform.gateway.opsUrl()}/metrics`)).text();
    return metrics
      .split('\n')
      .filter((line) => line.startsWith('pcp_gateway_key_lookups_total{'))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
  };
  const expectRefused = (response: Awaited<ReturnType<typeof call>>) => {
    expectProblem(response, 429, 'RATE_LIMITED');
    expect(response.body.retryable).toBe(true);
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  };

  it('refuses an address flooding made-up keys before any lookup, and nobody else', async () => {
    const partner = await platform.newPartner('commerce');
    const partnerAddress = '198.51.100.7';
    const attacker = '203.0.113.5';
    const bearer = `Bearer ${partner.apiKey}`;
    expect((await listStores(partnerAddress, bearer)).status).toBe(200);

    const before = await keyLookups();
    for (let n = 0; n < failuresPerMinute; n++) {
      expectProblem(await listStores(attacker, `Bearer ${madeUpKey()}`), 401, 'UNAUTHORIZED');
    }
    expect(await keyLookups()).toBe(before + failuresPerMinute);
    // Over the budget: refused before the key is looked up, whatever it sends.
    expectRefused(await listStores(attacker, `Bearer ${madeUpKey()}`));
    expectRefused(await listStores(attacker, 'Bearer not-a-key'));
    expectRefused(await listStores(attacker));
    expect(await keyLookups()).toBe(before + failuresPerMinute);

    // The partner's key is still cached: it works from its own address and even from the
    // flooded one, without a lookup; another address is not limited.
    expect((await listStores(partnerAddress, bearer)).status).toBe(200);
    expect((await listStores(attacker, bearer)).status).toBe(200);
    expect(await keyLookups()).toBe(before + failuresPerMinute);
    expectProblem(await listStores('198.51.100.8', `Bearer ${madeUpKey()}`), 401, 'UNAUTHORIZED');
  });

  it('counts missing and malformed keys too, which never reach the database', async () => {
    const address = '203.0.113.6';
    const before = await keyLookups();
    const unusable = [undefined, 'Bearer not-a-key', 'Basic dXNlcjpwYXNz'];
    for (let n = 0; n < failuresPerMinute; n++) {
      const response = await listStores(address, unusable[n % unusable.length]);
      expectProblem(response, 401, 'UNAUTHORIZED');
    }
    expectRefused(await listStores(address, `Bearer ${madeUpKey()}`));
    expect(await keyLookups()).toBe(before);
  });

  it('counts failures only: successes from the same address neither count nor are refused', async () => {
    const partner = await platform.newPartner('commerce');
    const address = '203.0.113.7';
    for (let n = 0; n < failuresPerMinute - 1; n++) {
      expect((await listStores(address, `Bearer ${madeUpKey()}`)).status).toBe(401);
    }
    for (let n = 0; n < failuresPerMinute; n++) {
      expect((await listStores(address, `Bearer ${partner.apiKey}`)).status).toBe(200);
    }
    expect((await listStores(address, `Bearer ${madeUpKey()}`)).status).toBe(401);
    expectRefused(await listStores(address, `Bearer ${madeUpKey()}`));
  });
});

describe('documentation', () => {
  it('serves an OpenAPI document generated from the contracts', async () => {
    const response = await call(platform.baseUrl, 'GET', '/openapi.json');
    expect(response.status).toBe(200);
    expect(response.body.openapi).toMatch(/^3\./);
    expect(Object.keys(response.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/commerce/stores/{storeId}',
        '/v1/commerce/stores',
        '/v1/commerce/stores/{storeId}/status',
        '/v1/marketfront/stores/{storeId}',
      ]),
    );
    const put = response.body.paths['/v1/commerce/stores/{storeId}'].put;
    expect(JSON.stringify(put.requestBody)).toContain('fulfillmentTypes');
    expect(response.body.components.securitySchemes.bearerAuth.scheme).toBe('bearer');
    expect(response.body.paths['/health/ready']).toBeUndefined();
  });

  it('serves Swagger UI and a page for each error code', async () => {
    const docs = await fetch(`${platform.baseUrl}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
    const code = await call(platform.baseUrl, 'GET', '/docs/errors/STORE_NOT_FOUND');
    expect(code.body).toMatchObject({
      errorCode: 'STORE_NOT_FOUND',
      status: 404,
      category: 'not_found',
    });
    expect((await call(platform.baseUrl, 'GET', '/docs/errors/NOPE')).status).toBe(404);
  });
});

describe('health and resilience', () => {
  it('is live on its public port, and ready on its ops port when NATS and its database are', async () => {
    expect((await call(platform.baseUrl, 'GET', '/health/live')).status).toBe(200);
    const ready = await call(platform.gateway.opsUrl(), 'GET', '/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ nats: true, database: true, accepting: true });
  });

  it('serves Prometheus metrics on its ops port only', async () => {
    const response = await fetch(`${platform.gateway.opsUrl()}/metrics`);
    expect(await response.text()).toContain('pcp_http_request_duration_seconds');
    // The public port answers neither: they are not for partners.
    for (const path of ['/metrics', '/health/ready']) {
      const hidden = await call(platform.baseUrl, 'GET', path);
      expectProblem(hidden, 404, 'NOT_FOUND');
    }
  });

  it('answers 503 (not a hang) while stores is down, and heals when it returns', async () => {
    const storeId = newStoreId();
    await call(platform.baseUrl, 'PUT', `${storesPath}/${storeId}`, {
      apiKey: commerce.apiKey,
      body: storeProfile(),
    });
    await platform.stores.stop();

    const started = Date.now();
    const down = await call(platform.baseUrl, 'GET', `${storesPath}/${storeId}`, {
      apiKey: commerce.apiKey,
    });
    expectProblem(down, 503, 'SERVICE_UNAVAILABLE');
    expect(down.body.retryable).toBe(true);
    // No responders is immediate; it must not wait for the 2 s request timeout.
    expect(Date.now() - started).toBeLessThan(1_500);
    // One service down makes its own routes 503, not the gateway unready: the rest still work.
    expect((await call(platform.gateway.opsUrl(), 'GET', '/health/ready')).status).toBe(200);
    const catalogRoute = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${storeId}/catalogset`,
      { apiKey: distribution.apiKey },
    );
    expectProblem(catalogRoute, 404, 'CATALOGSET_NOT_FOUND');

    platform.stores = createStoresService({
      ...platform.serviceDeps('stores'),
      db: platform.storesDb,
    });
    await platform.stores.start();
    const healed = await call(platform.baseUrl, 'GET', `${storesPath}/${storeId}`, {
      apiKey: commerce.apiKey,
    });
    expect(healed.status).toBe(200);
  });
});
