import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createPlatformClient, placeOrder, type PlaceOrderRequest } from '../src/index.js';
import {
  problem,
  startScriptedServer,
  type ScriptedAnswer,
  type ScriptedServer,
} from './scripted-server.js';

/**
 * The client's apiVersion (docs/guide/versioning.md#the-typed-client): PCP-Version on every
 * request, or none (the partner's pin answers).
 */

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const storeId = randomUUID();

describe('createPlatformClient’s apiVersion', () => {
  it('sends PCP-Version on every request, retries of placeOrder included', async () => {
    server = await startScriptedServer((request, index): ScriptedAnswer =>
      request.url.endsWith('/place') && index === 1
        ? {
            status: 503,
            headers: { 'retry-after': '0' },
            body: problem(503, 'SERVICE_UNAVAILABLE', true),
          }
        : {
            status: 200,
            headers: { 'pcp-version': '2026-11-01' },
            body: { orderId: randomUUID() },
          },
    );
    const client = createPlatformClient({
      baseUrl: server.baseUrl,
      apiKey: 'pk_test',
      apiVersion: '2026-11-01',
    });
    const read = await client.GET('/v1/commerce/stores/{storeId}', {
      params: { path: { storeId } },
    });
    expect(read.response.headers.get('pcp-version')).toBe('2026-11-01');
    await placeOrder(client, {
      body: { cart: { storeId } } as unknown as PlaceOrderRequest,
      endUserId: 'diner-1',
    });
    expect(server.requests.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `GET /v1/commerce/stores/${storeId}`,
      'POST /v1/marketfront/orders/place',
      'POST /v1/marketfront/orders/place',
    ]);
    for (const request of server.requests) {
      expect(request.headers['pcp-version']).toBe('2026-11-01');
      expect(request.headers.authorization).toBe('Bearer pk_test');
    }
  });

  it('sends none by default: the pin answers', async () => {
    server = await startScriptedServer([{ status: 200, body: { stores: [] } }]);
    const client = createPlatformClient({ baseUrl: server.baseUrl, apiKey: 'pk_test' });
    await client.GET('/v1/commerce/stores');
    expect(server.requests[0]!.headers).not.toHaveProperty('pcp-version');
  });

  it('gives way to a request’s own PCP-Version', async () => {
    server = await startScriptedServer([{ status: 200, body: { stores: [] } }]);
    const client = createPlatformClient({
      baseUrl: server.baseUrl,
      apiKey: 'pk_test',
      apiVersion: '2026-11-01',
    });
    await client.GET('/v1/commerce/stores', { headers: { 'pcp-version': '2026-12-01' } });
    expect(server.requests[0]!.headers['pcp-version']).toBe('2026-12-01');
  });
});
