// Console sessions (docs/guide/authentication.md#console-sessions): an API key exchanged for a
// session cookie, its flags, its CSRF rules, its tenant, its ends (revocation, suspension, the
// cap, idle and absolute expiry, sign-out) on two gateways, and hostile input.
import { createSessionClient } from '@pcp/client';
import { authInvalidationSubject, sessionCookieName } from '@pcp/contracts';
import type { GatewayService } from '@pcp/gateway';
import { createKey, revokeKey, setSuspended } from '@pcp/gateway/admin';
import { randomBytes } from 'node:crypto';
import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { newStoreId, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call, type HttpResult } from './http.js';

let env: TestEnvironment;
let platform: TestPlatform;
/** Another replica of the gateway on the same database and subjects. */
let second: GatewayService;
const extraGateways: GatewayService[] = [];

/** A gateway replica of the platform's, with `overrides` of its configuration. */
async function startGateway(overrides: Record<string, string> = {}): Promise<GatewayService> {
  const gateway = platform.newGateway(overrides);
  await gateway.start();
  extraGateways.push(gateway);
  return gateway;
}

beforeAll(async () => {
  env = await createTestEnvironment();
  // Caches on for a minute, as in production: only the invalidation message can end a
  // session within seconds. Client addresses come from X-Forwarded-For, so each test has its
  // own failed-authentication budget.
  platform = await startPlatform(env, {
    gatewayEnv: { AUTH_CACHE_TTL_MS: '60000', TRUST_PROXY: 'true', SESSIONS_PER_PARTNER: '3' },
  });
  second = await startGateway();
});

afterAll(async () => {
  for (const gateway of extraGateways) await gateway.stop();
  await platform?.stop();
  await env?.cleanup();
});

/** A client address of its own, so failed authentications of one test do not limit others. */
const newAddress = () => `10.${[...randomBytes(3)].join('.')}`;

interface Signed {
  cookie: string;
  csrfToken: string;
  body: Record<string, unknown>;
  setCookie: string;
}

async function signIn(apiKey: string, baseUrl = platform.baseUrl): Promise<Signed> {
  const response = await call(baseUrl, 'POST', '/v1/sessions', {
    body: { apiKey },
    headers: { 'x-forwarded-for': newAddress() },
  });
  expect(response.status, response.text).toBe(201);
  const setCookie = response.headers.getSetCookie()[0] ?? '';
  const token = new RegExp(`^${sessionCookieName}=([^;]+)`).exec(setCookie)?.[1];
  expect(token).toBeDefined();
  return {
    cookie: `${sessionCookieName}=${token}`,
    csrfToken: response.body.csrfToken as string,
    body: response.body as Record<string, unknown>,
    setCookie,
  };
}

/** A request with the session's cookie (and its CSRF token unless `csrf` says otherwise). */
function withSession(
  session: Signed,
  method: string,
  path: string,
  options: { body?: unknown; csrf?: string | null; headers?: Record<string, string> } = {},
  baseUrl = platform.baseUrl,
): Promise<HttpResult> {
  const csrf = options.csrf === undefined ? session.csrfToken : options.csrf;
  return call(baseUrl, method, path, {
    ...(options.body === undefined ? {} : { body: options.body }),
    headers: {
      cookie: session.cookie,
      'x-forwarded-for': newAddress(),
      ...(csrf === null ? {} : { 'x-csrf-token': csrf }),
      ...options.headers,
    },
  });
}

function expectProblem(response: HttpResult, status: number, errorCode: string) {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({
    status,
    errorCode,
    requestId: response.headers.get('x-request-id'),
  });
}

const putStore = (session: Signed, storeId: string, options: { csrf?: string | null } = {}) =>
  withSession(session, 'PUT', `/v1/commerce/stores/${storeId}`, {
    body: storeProfile({ orderSubmissionUrl: undefined }),
    ...options,
  });

describe('signing in', () => {
  it('sets an HttpOnly, Secure, SameSite=Strict __Host- cookie for the rest of the session', async () => {
    const partner = await platform.newPartner('commerce');
    const session = await signIn(partner.apiKey);
    expect(session.body).toEqual({
      partnerId: partner.partnerId,
      accountId: partner.partnerId,
      kind: 'commerce',
      mode: 'live',
      keyId: partner.keyId,
      expiresAt: expect.any(String),
      csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const lifetime = Date.parse(session.body.expiresAt as string) - Date.now();
    expect(lifetime).toBeGreaterThan(12 * 3_600_000 - 60_000);
    expect(lifetime).toBeLessThanOrEqual(12 * 3_600_000);
    const [pair, ...attributes] = session.setCookie.split('; ');
    expect(pair).toMatch(/^__Host-pcp_session=[A-Za-z0-9_-]{43}$/);
    const maxAge = attributes.find((attribute) => attribute.startsWith('Max-Age='));
    expect(Number(maxAge?.slice('Max-Age='.length))).toBeGreaterThan(12 * 3_600 - 60);
    expect(attributes.filter((attribute) => attribute !== maxAge).sort()).toEqual(
      ['HttpOnly', 'Path=/', 'SameSite=Strict', 'Secure'].sort(),
    );
    // The key is nowhere in the answer; the page reads its session again after a reload.
    const current = await withSession(session, 'GET', '/v1/sessions/current');
    expect(current.status).toBe(200);
    expect(current.body).toEqual(session.body);
    expect(current.headers.get('cache-control')).toBe('no-store');
  });

  it('makes a test-mode session of a test key, acting as the test tenant', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    const session = await signIn(partner.apiKey);
    expect(session.body).toMatchObject({
      partnerId: partner.testPartnerId,
      accountId: partner.partnerId,
      kind: 'distribution',
      mode: 'test',
    });
    // The test helpers, which have no kind of their own, take the cookie like every operation:
    // with its CSRF token, and in test mode only.
    const reset = await withSession(session, 'POST', '/v1/test/reset');
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body.deleted).toBeTypeOf('object');
    expectProblem(
      await withSession(session, 'POST', '/v1/test/reset', { csrf: null }),
      403,
      'CSRF_REJECTED',
    );
    const live = await signIn((await platform.newPartner('distribution')).apiKey);
    expectProblem(await withSession(live, 'POST', '/v1/test/reset'), 403, 'FORBIDDEN');
  });

  it.each([
    ['an unknown key', `pcp_live_0123456789abcdef_${'A'.repeat(43)}`],
    ['a malformed key', 'not-a-key'],
    ['an empty key', ''],
  ])('answers %s with 401 and counts it against the address', async (_case, apiKey) => {
    const address = newAddress();
    const attempt = () =>
      call(platform.baseUrl, 'POST', '/v1/sessions', {
        body: { apiKey },
        headers: { 'x-forwarded-for': address },
      });
    const first = await attempt();
    expectProblem(first, 401, 'UNAUTHORIZED');
    expect(first.headers.getSetCookie()).toEqual([]);
    // The default budget is 30 failures a minute per address.
    for (let failures = 1; failures < 30; failures++) await attempt();
    expectProblem(await attempt(), 429, 'RATE_LIMITED');
  });

  it('refuses a revoked key and a suspended partner’s key', async () => {
    const revoked = await platform.newPartner('commerce');
    await revokeKey(platform.gatewayDb, revoked.keyId);
    const suspended = await platform.newPartner('commerce');
    await setSuspended(platform.gatewayDb, suspended.partnerId, true);
    for (const apiKey of [revoked.apiKey, suspended.apiKey]) {
      const response = await call(platform.baseUrl, 'POST', '/v1/sessions', {
        body: { apiKey },
        headers: { 'x-forwarded-for': newAddress() },
      });
      expectProblem(response, 401, 'UNAUTHORIZED');
    }
  });
});

describe('a session acts as its key', () => {
  it('reads the routes of its kind only, within its partner’s rate limits', async () => {
    const commerce = await signIn((await platform.newPartner('commerce')).apiKey);
    const market = await signIn((await platform.newPartner('distribution')).apiKey);
    const stores = await withSession(commerce, 'GET', '/v1/commerce/stores');
    expect(stores.status, stores.text).toBe(200);
    expect(stores.headers.get('x-ratelimit-limit')).toBe('1000');
    expectProblem(
      await withSession(commerce, 'GET', `/v1/marketfront/stores/${newStoreId()}`),
      403,
      'FORBIDDEN',
    );
    expectProblem(
      await withSession(market, 'GET', `/v1/marketfront/stores/${newStoreId()}`),
      404,
      'STORE_NOT_FOUND',
    );
    expectProblem(await withSession(market, 'GET', '/v1/commerce/stores'), 403, 'FORBIDDEN');
    // An API key in the Authorization header wins over the cookie.
    const keyed = await call(platform.baseUrl, 'GET', '/v1/commerce/stores', {
      apiKey: 'pcp_live_0123456789abcdef_' + 'A'.repeat(43),
      headers: { cookie: commerce.cookie, 'x-forwarded-for': newAddress() },
    });
    expectProblem(keyed, 401, 'UNAUTHORIZED');
  });

  it('writes only with its CSRF token and never from another site', async () => {
    const session = await signIn((await platform.newPartner('commerce')).apiKey);
    const storeId = newStoreId();
    expectProblem(await putStore(session, storeId, { csrf: null }), 403, 'CSRF_REJECTED');
    expectProblem(await putStore(session, storeId, { csrf: 'x'.repeat(43) }), 403, 'CSRF_REJECTED');
    expectProblem(await putStore(session, storeId, { csrf: 'short' }), 403, 'CSRF_REJECTED');
    const other = await signIn((await platform.newPartner('commerce')).apiKey);
    expectProblem(
      await putStore(session, storeId, { csrf: other.csrfToken }),
      403,
      'CSRF_REJECTED',
    );
    const crossSite = await withSession(session, 'PUT', `/v1/commerce/stores/${storeId}`, {
      body: storeProfile({ orderSubmissionUrl: undefined }),
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expectProblem(crossSite, 403, 'CSRF_REJECTED');
    expectProblem(
      await withSession(session, 'GET', '/v1/commerce/stores', {
        headers: { 'sec-fetch-site': 'cross-site' },
      }),
      403,
      'CSRF_REJECTED',
    );
    // Nothing was written by the refused attempts.
    expectProblem(
      await withSession(session, 'GET', `/v1/commerce/stores/${storeId}`),
      404,
      'STORE_NOT_FOUND',
    );
    const created = await withSession(session, 'PUT', `/v1/commerce/stores/${storeId}`, {
      body: storeProfile({ orderSubmissionUrl: undefined }),
      headers: { 'sec-fetch-site': 'same-origin' },
    });
    expect(created.status, created.text).toBe(201);
    const read = await withSession(session, 'GET', `/v1/commerce/stores/${storeId}`);
    expect(read.status).toBe(200);
    // A POST likewise: refused without the token, through with it.
    const pause = (csrf?: null) =>
      withSession(session, 'POST', `/v1/commerce/stores/${storeId}/status`, {
        body: { status: 'paused', reason: 'too_busy' },
        ...(csrf === null ? { csrf } : {}),
      });
    expectProblem(await pause(null), 403, 'CSRF_REJECTED');
    const paused = await pause();
    expect(paused.status, paused.text).toBe(200);
  });

  it('never reads another partner’s data, nor the other mode’s', async () => {
    const owner = await platform.newPartner('commerce');
    const ownerSession = await signIn(owner.apiKey);
    const storeId = newStoreId();
    expect((await putStore(ownerSession, storeId)).status).toBe(201);
    const stranger = await signIn((await platform.newPartner('commerce')).apiKey);
    const ownTest = await signIn(
      (await createKey(platform.gatewayDb, owner.partnerId, { mode: 'test' })).apiKey,
    );
    for (const session of [stranger, ownTest]) {
      expectProblem(
        await withSession(session, 'GET', `/v1/commerce/stores/${storeId}`),
        404,
        'STORE_NOT_FOUND',
      );
      expectProblem(await putStore(session, storeId), 404, 'STORE_NOT_FOUND');
      const list = await withSession(session, 'GET', '/v1/commerce/stores');
      expect(list.body.stores).toEqual([]);
    }
    expect(
      (await withSession(ownerSession, 'GET', `/v1/commerce/stores/${storeId}`)).body.name,
    ).toBe('Chicago Burgers');
  });
});

describe('the webhook stream by cookie', () => {
  /** The stream's status and content type, its connection dropped once they arrive. */
  async function openStream(session: Signed) {
    const request = get(new URL('/v1/marketfront/webhooks/stream', platform.baseUrl), {
      agent: false,
      headers: { cookie: session.cookie, accept: 'text/event-stream' },
    });
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      request.once('response', resolve).once('error', reject);
    });
    response.on('error', () => undefined);
    request.destroy();
    return { status: response.statusCode, type: response.headers['content-type'] };
  }

  it('opens for a test-mode session, as EventSource sends it, and not for a live one', async () => {
    const partner = await platform.newPartner('distribution', { mode: 'test' });
    expect(await openStream(await signIn(partner.apiKey))).toMatchObject({
      status: 200,
      type: expect.stringContaining('text/event-stream'),
    });
    const live = await signIn((await platform.newPartner('distribution')).apiKey);
    expect((await openStream(live)).status).toBe(403);
  });
});

/** Polls until the session is refused (401) on `baseUrl`, within a few seconds. */
async function expectEnded(session: Signed, baseUrl: string) {
  await expect
    .poll(
      async () => (await withSession(session, 'GET', '/v1/commerce/stores', {}, baseUrl)).status,
      {
        timeout: 5_000,
        interval: 100,
      },
    )
    .toBe(401);
  expectProblem(
    await withSession(session, 'GET', '/v1/sessions/current', {}, baseUrl),
    401,
    'UNAUTHORIZED',
  );
}

/** What the admin command announces after a change of keys or partners. */
async function announce(target: { partnerId: string; keyId?: string }) {
  env.nc.publish(authInvalidationSubject(env.prefix), JSON.stringify(target));
  await env.nc.flush();
}

describe('a session ends', () => {
  it('when its key is revoked, on every gateway within seconds; the partner’s other keys’ stay', async () => {
    const partner = await platform.newPartner('commerce');
    const other = await createKey(platform.gatewayDb, partner.partnerId);
    const session = await signIn(partner.apiKey);
    const otherSession = await signIn(other.apiKey, second.url());
    // Both replicas have the session and its key cached.
    for (const baseUrl of [platform.baseUrl, second.url()]) {
      expect((await withSession(session, 'GET', '/v1/commerce/stores', {}, baseUrl)).status).toBe(
        200,
      );
    }
    await revokeKey(platform.gatewayDb, partner.keyId);
    await announce({ partnerId: partner.partnerId, keyId: partner.keyId });
    await expectEnded(session, platform.baseUrl);
    await expectEnded(session, second.url());
    expect((await withSession(otherSession, 'GET', '/v1/commerce/stores')).status).toBe(200);
  });

  it('when its partner is suspended, in both modes, on every gateway', async () => {
    const partner = await platform.newPartner('commerce');
    const test = await createKey(platform.gatewayDb, partner.partnerId, { mode: 'test' });
    const live = await signIn(partner.apiKey);
    const sandbox = await signIn(test.apiKey, second.url());
    for (const baseUrl of [platform.baseUrl, second.url()]) {
      for (const session of [live, sandbox]) {
        expect((await withSession(session, 'GET', '/v1/commerce/stores', {}, baseUrl)).status).toBe(
          200,
        );
      }
    }
    await setSuspended(platform.gatewayDb, partner.partnerId, true);
    await announce({ partnerId: partner.partnerId });
    for (const baseUrl of [platform.baseUrl, second.url()]) {
      await expectEnded(live, baseUrl);
      await expectEnded(sandbox, baseUrl);
    }
    // Resuming the partner does not bring them back.
    await setSuspended(platform.gatewayDb, partner.partnerId, false);
    await announce({ partnerId: partner.partnerId });
    expect((await withSession(live, 'GET', '/v1/commerce/stores')).status).toBe(401);
  });

  it('when its partner signs in more than the cap allows in its mode: the oldest first', async () => {
    const partner = await platform.newPartner('commerce');
    const test = await createKey(platform.gatewayDb, partner.partnerId, { mode: 'test' });
    const sandbox = await signIn(test.apiKey);
    const live: Signed[] = [];
    for (let count = 0; count < 4; count++) {
      live.push(await signIn(partner.apiKey, count % 2 === 0 ? platform.baseUrl : second.url()));
      // Sessions made in the same millisecond would have no oldest.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // The cap is 3 per partner and mode: the first live session ended, on both replicas.
    await expectEnded(live[0]!, platform.baseUrl);
    await expectEnded(live[0]!, second.url());
    for (const session of [...live.slice(1), sandbox]) {
      expect((await withSession(session, 'GET', '/v1/commerce/stores')).status).toBe(200);
    }
    const rows = await platform.gatewayDb
      .selectFrom('console_sessions')
      .select(['mode'])
      .where('partner_id', '=', partner.partnerId)
      .execute();
    expect(rows.map((row) => row.mode).sort()).toEqual(['live', 'live', 'live', 'test']);
  });

  it('when it is signed out: 204, the cookie cleared, the session gone on every gateway', async () => {
    const session = await signIn((await platform.newPartner('commerce')).apiKey);
    expect(
      (await withSession(session, 'GET', '/v1/sessions/current', {}, second.url())).status,
    ).toBe(200);
    expectProblem(
      await withSession(session, 'DELETE', '/v1/sessions/current', { csrf: null }),
      403,
      'CSRF_REJECTED',
    );
    const out = await withSession(session, 'DELETE', '/v1/sessions/current');
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()).toEqual([
      '__Host-pcp_session=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0',
    ]);
    await expectEnded(session, platform.baseUrl);
    await expectEnded(session, second.url());
    const again = await withSession(session, 'DELETE', '/v1/sessions/current');
    expectProblem(again, 401, 'UNAUTHORIZED');
  });

  it('after its idle timeout, and at its absolute end however used', async () => {
    const short = await startGateway({
      SESSION_IDLE_TIMEOUT_MS: '1500',
      SESSION_MAX_AGE_MS: '4000',
    });
    const partner = await platform.newPartner('commerce');
    const idle = await signIn(partner.apiKey, short.url());
    expect(idle.setCookie).toMatch(/Max-Age=[34]$/);
    const used = await signIn(partner.apiKey, short.url());
    const signedInAt = Date.now();
    const read = (session: Signed) =>
      withSession(session, 'GET', '/v1/commerce/stores', {}, short.url());
    expect((await read(idle)).status).toBe(200);
    // Used every 400 ms, the second outlives the idle timeout; the first, unused, does not.
    const useUntil = async (sinceSignIn: number) => {
      while (Date.now() - signedInAt < sinceSignIn) {
        expect((await read(used)).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
    };
    await useUntil(2_000);
    expectProblem(await read(idle), 401, 'UNAUTHORIZED');
    await useUntil(3_500);
    await expect
      .poll(async () => (await read(used)).status, { timeout: 2_000, interval: 100 })
      .toBe(401);
    expect(Date.now() - signedInAt).toBeGreaterThanOrEqual(4_000);
  });
});

describe('the typed client of a session', () => {
  /** A fetch that keeps the one cookie, as a browser would for the page. */
  function browserFetch(): typeof fetch {
    let cookie: string | undefined;
    return async (input, init) => {
      const request = new Request(input, init);
      if (cookie) request.headers.set('cookie', cookie);
      request.headers.set('x-forwarded-for', newAddress());
      const response = await fetch(request);
      const set = response.headers.getSetCookie()[0];
      if (set) cookie = /Max-Age=0/.test(set) ? undefined : set.split(';')[0];
      return response;
    };
  }

  it('signs in, writes with the CSRF token it learned, and signs out', async () => {
    const partner = await platform.newPartner('commerce');
    const client = createSessionClient({ baseUrl: platform.baseUrl, fetch: browserFetch() });
    const signedIn = await client.POST('/v1/sessions', { body: { apiKey: partner.apiKey } });
    expect(signedIn.data?.partnerId).toBe(partner.partnerId);
    const storeId = newStoreId();
    const created = await client.PUT('/v1/commerce/stores/{storeId}', {
      params: { path: { storeId } },
      body: storeProfile({ orderSubmissionUrl: undefined }),
    });
    expect(created.response.status).toBe(201);
    expect((await client.DELETE('/v1/sessions/current')).response.status).toBe(204);
    const after = await client.GET('/v1/commerce/stores');
    expect(after.error).toMatchObject({ status: 401, errorCode: 'UNAUTHORIZED' });
  });
});

describe('hostile input', () => {
  const signInWith = (init: { rawBody?: string; headers?: Record<string, string> }) =>
    call(platform.baseUrl, 'POST', '/v1/sessions', {
      ...init,
      headers: { 'x-forwarded-for': newAddress(), ...init.headers },
    });

  it.each([
    ['malformed JSON', '{"apiKey":', 400, 'REQUEST_INVALID'],
    ['a number as the key', '{"apiKey":12345}', 400, 'REQUEST_INVALID'],
    ['an unknown field', '{"apiKey":"pcp_x","admin":true}', 400, 'REQUEST_INVALID'],
    ['an array', '[]', 400, 'REQUEST_INVALID'],
    ['no key', '{}', 400, 'REQUEST_INVALID'],
    ['a prototype poisoning', '{"apiKey":"x","__proto__":{"admin":true}}', 400, 'REQUEST_INVALID'],
    ['an oversized body', JSON.stringify({ apiKey: 'k'.repeat(4_000) }), 413, 'PAYLOAD_TOO_LARGE'],
  ])('refuses %s with a ProblemDetail', async (_case, rawBody, status, errorCode) => {
    expectProblem(await signInWith({ rawBody }), status, errorCode);
  });

  it('refuses a body that is not JSON', async () => {
    expectProblem(
      await signInWith({ rawBody: 'apiKey=x', headers: { 'content-type': 'text/plain' } }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });

  it.each([
    ['garbage', `${sessionCookieName}=%00%ff<script>`],
    ['a made-up token', `${sessionCookieName}=${randomBytes(32).toString('base64url')}`],
    ['an empty value', `${sessionCookieName}=`],
    ['a long value', `${sessionCookieName}=${'A'.repeat(8_000)}`],
    ['many other cookies', Array.from({ length: 500 }, (_, i) => `c${i}=v${i}`).join('; ')],
    ['no session among others', 'pcp_session=x; theme=dark'],
  ])(
    'answers a cookie of %s with 401, on routes and on the current session',
    async (_case, cookie) => {
      for (const path of ['/v1/commerce/stores', '/v1/sessions/current']) {
        const response = await call(platform.baseUrl, 'GET', path, {
          headers: { cookie, 'x-forwarded-for': newAddress() },
        });
        expectProblem(response, 401, 'UNAUTHORIZED');
      }
    },
  );

  it('finds the session among many cookies, and refuses a cookie header over the size limit', async () => {
    const session = await signIn((await platform.newPartner('commerce')).apiKey);
    const crowd = Array.from({ length: 300 }, (_, i) => `c${i}=v${i}`);
    const among = await call(platform.baseUrl, 'GET', '/v1/sessions/current', {
      headers: { cookie: [...crowd, session.cookie].join('; '), 'x-forwarded-for': newAddress() },
    });
    expect(among.status).toBe(200);
    // Node's parser refuses it before any route: a ProblemDetail without a request's id.
    const huge = await call(platform.baseUrl, 'GET', '/v1/sessions/current', {
      headers: { cookie: `${session.cookie}; big=${'A'.repeat(40_000)}` },
    });
    expect(huge.status).toBe(400);
    expect(huge.body).toMatchObject({ status: 400, errorCode: 'REQUEST_INVALID' });
  });
});
