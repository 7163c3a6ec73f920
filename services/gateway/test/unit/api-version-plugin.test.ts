import { LATEST_API_VERSION, type ApiVersion } from '@pcp/contracts';
import { createLogger } from '@pcp/service-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/authenticator.js';
import { installErrorHandling } from '../../src/http/problem.js';
import apiVersion, { apiVersionHeaderPlugin } from '../../src/plugins/api-version.js';

// The partner's pin (set by the auth plugin from its row: docs/guide/versioning.md#pins) as the
// plugin reads it, on a bare Fastify app: the principal comes from a stand-in of the auth
// plugin, which the gateway's tests run for real.

const docsUrl = 'https://api.partner-commerce.test/docs';
let app: FastifyInstance;

/** A principal pinned to the `x-test-pin` header's version (none without it). */
function principalOf(pin: string | undefined): Principal {
  return {
    partnerId: 'p',
    accountId: 'p',
    mode: 'live',
    kind: 'commerce',
    keyId: 'k',
    paymentTypes: [],
    rateLimits: {},
    via: 'key',
    ...(pin ? { apiVersion: pin as ApiVersion } : {}),
  };
}

beforeAll(async () => {
  app = Fastify({ logger: false });
  installErrorHandling(app, docsUrl, createLogger('test', 'silent'));
  await app.register(apiVersionHeaderPlugin);
  await app.register(
    fp(
      async (scope) => {
        scope.decorateRequest('principal', null);
        scope.addHook('onRequest', async (request) => {
          const pin = request.headers['x-test-pin'];
          request.principal = principalOf(typeof pin === 'string' ? pin : undefined);
        });
      },
      { name: 'auth' },
    ),
  );
  await app.register(fp(async () => undefined, { name: 'rate-limit' }));
  await app.register(apiVersion);
  app.get('/store', { schema: { operationId: 'getStore' } }, async () => ({
    storeId: 's',
    status: 'busy',
    extraPrepMinutes: 20,
  }));
  app.get('/special-hours', { schema: { operationId: 'getSpecialHours' } }, async () => ({
    days: [],
  }));
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

const get = (url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers });

describe('a partner’s pin', () => {
  it('is the version of its requests without PCP-Version', async () => {
    const pinned = await get('/store', { 'x-test-pin': '2026-11-01' });
    expect(pinned.headers['pcp-version']).toBe('2026-11-01');
    expect(pinned.json()).toEqual({ storeId: 's', status: 'online' });
    const hidden = await get('/special-hours', { 'x-test-pin': '2026-11-01' });
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toMatchObject({
      errorCode: 'NOT_FOUND',
      detail: 'No route GET /special-hours',
    });
    expect(hidden.headers['pcp-version']).toBe('2026-11-01');
  });

  it('gives way to the header', async () => {
    const newer = await get('/store', { 'x-test-pin': '2026-11-01', 'pcp-version': '2026-12-01' });
    expect(newer.headers['pcp-version']).toBe('2026-12-01');
    expect(newer.json()).toEqual({ storeId: 's', status: 'busy', extraPrepMinutes: 20 });
    const older = await get('/store', { 'x-test-pin': '2026-12-01', 'pcp-version': '2026-11-01' });
    expect(older.json()).toEqual({ storeId: 's', status: 'online' });
  });

  it('is the newest when the partner has none', async () => {
    const unpinned = await get('/store');
    expect(unpinned.headers['pcp-version']).toBe(LATEST_API_VERSION);
    expect(unpinned.json()).toMatchObject({ status: 'busy' });
  });
});
