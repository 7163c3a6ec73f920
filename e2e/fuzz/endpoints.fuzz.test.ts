import { buildOpenApiDocument } from '@pcp/gateway';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startCatalogHost } from '../catalog-host.js';
import { call } from '../http.js';
import { ingestCatalog } from '../ingest.js';
import { checkResponse, send } from './check-response.js';
import {
  operationsOf,
  requestsFor,
  type OpenApiDocument,
  type RequestContext,
} from './operations.js';
import { startProcessPlatform, type ProcessPlatform } from './process-platform.js';
import { FUZZ_RUNS, fuzzParameters } from './settings.js';

/**
 * Every operation of the OpenAPI document, fuzzed: requests generated from its schemas
 * (path, query, headers, body) and mutated beyond them, sent with either partner kind's key
 * or none, against the services running as their own processes. Each answer is checked
 * (checkResponse); afterwards no service process restarted and none grew past the bound.
 */

/** The gateway's body limit in this run (its default). */
const BODY_LIMIT = 1024 * 1024;
/** Peak resident memory a service process may reach while fuzzed. */
const MAX_SERVICE_RSS_MB = Number(process.env.FUZZ_MAX_RSS_MB ?? 700);

/**
 * Operations whose contract asks for a 404 without a body for a malformed id (the spec's
 * store lookup, and the store's item availability beside it); their description says so,
 * which the first test checks.
 */
const BODILESS_404 = new Set([
  'GET /v1/marketfront/stores/{storeId}',
  'GET /v1/marketfront/stores/{storeId}/item-availability',
]);

// The document rendered without connections, so the list of tests is the list of operations.
const document = (await buildOpenApiDocument()) as unknown as OpenApiDocument;
const operations = operationsOf(document);

let env: TestEnvironment;
let running: ProcessPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let context: RequestContext;
const fuzzed = new Map<string, number>();

beforeAll(async () => {
  env = await createTestEnvironment();
  running = await startProcessPlatform(env, {
    gatewayEnv: { BODY_LIMIT_BYTES: String(BODY_LIMIT), CATALOG_VALIDATION_TIMEOUT_MS: '5000' },
    serviceEnv: { catalog: { CATALOG_FETCH_TIMEOUT_MS: '3000' } },
  });
  const { platform } = running;
  host = await startCatalogHost();
  const commerce = await platform.newPartner('commerce');
  const distribution = await platform.newPartner('distribution');
  const storeId = randomUUID();
  const created = await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile(),
  });
  expect(created.status).toBe(201);
  const catalog = cartTestCatalog(storeId);
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document: catalog.document,
  });
  const { ids } = catalog;
  // Real ids, so valid-shaped requests get past "not found" into the handlers' work.
  context = {
    bodyLimit: BODY_LIMIT,
    keys: { commerce: commerce.apiKey, distribution: distribution.apiKey },
    known: {
      storeId: [storeId],
      catalogSetId: [ids.catalogSetId],
      itemId: [ids.burger, ids.soda, ids.fries, ids.bacon, ids.crispy, ids.soldOut],
      modifierGroupId: [ids.side, ids.extras, ids.baconStyle],
      callbackUrl: [host.serveJson('/catalog.json', catalog.document), `${host.base}/missing`],
      url: ['http://127.0.0.1:9/hooks'],
      'X-End-User-Id': ['fuzz-user'],
    },
  };
}, 300_000);

afterAll(async () => {
  await host?.close();
  await running?.stop();
  await env?.cleanup();
});

it('knows the operations allowed a bodiless 404 from their documented contract', () => {
  for (const id of BODILESS_404) {
    const [method, path] = id.split(' ') as [string, string];
    const operation = document.paths[path]?.[method.toLowerCase()] as { description?: string };
    expect(operation?.description).toMatch(/404 with no body/);
  }
});

describe.each(operations.map((operation) => [operation.id, operation] as const))(
  '%s',
  (id, operation) => {
    it(
      'answers every generated request with a well-formed answer, never a 5xx',
      async () => {
        await fc.assert(
          fc.asyncProperty(requestsFor(document, operation, context), async (request) => {
            fuzzed.set(id, (fuzzed.get(id) ?? 0) + 1);
            checkResponse(request, await send(running.platform.baseUrl, request), {
              bodiless404: BODILESS_404.has(id),
            });
          }),
          fuzzParameters(),
        );
      },
      120_000 + FUZZ_RUNS * 2_000,
    );
  },
);

/** Inputs the fuzzer found failing, kept so they stay fixed (each named with what broke). */
describe('regressions found by fuzzing', () => {
  const discover = (latitude: number, longitude: number) =>
    call(running.platform.baseUrl, 'POST', '/v1/marketfront/stores/discover', {
      apiKey: context.keys.distribution,
      body: { location: { latitude, longitude }, fulfillmentType: 'PICKUP' },
    });

  it('discovers at a subnormal latitude (PostgreSQL underflow in the distance was a 500)', async () => {
    const response = await discover(5e-324, 0);
    expect(response.status, response.text).toBe(200);
    expect(response.body.stores).toEqual(expect.any(Array));
  });

  it('finds a store stored at latitude 1e-200 from the equator (every search there was a 500)', async () => {
    const storeId = randomUUID();
    const put = await call(running.platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
      apiKey: context.keys.commerce,
      body: storeProfile({
        address: { ...storeProfile().address, latitude: 1e-200, longitude: -1e-300 },
      }),
    });
    expect(put.status, put.text).toBe(201);
    for (const [latitude, longitude] of [
      [0, 0],
      [1e-200, 5e-324],
      [-0, -0],
    ] as const) {
      const response = await discover(latitude, longitude);
      expect(response.status, response.text).toBe(200);
      expect(response.body.stores.map((store: { storeId: string }) => store.storeId)).toContain(
        storeId,
      );
    }
  });
});

describe('regressions found by fuzzing: place bodies with no canonical form (RFC 8785)', () => {
  const placeWith = (body: string) => ({
    method: 'POST',
    url: '/v1/marketfront/orders/place',
    headers: {
      authorization: `Bearer ${context.keys.distribution}`,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
      'x-end-user-id': 'fuzz-user',
    },
    body,
    key: 'own' as const,
  });

  it.each([
    [
      'arrays nested 3,000 deep (canonicalizing overflowed the stack)',
      `${'['.repeat(3_000)}${']'.repeat(3_000)}`,
    ],
    ['a number beyond a double (-1e309 parsed as -Infinity)', '{"tip":-1e309}'],
    ['a lone surrogate', '{"client":{"userAgent":"\\ud800"}}'],
  ])('answers place with %s as 400 (it was a 500)', async (_name, body) => {
    const request = placeWith(body);
    const response = await send(running.platform.baseUrl, request);
    checkResponse(request, response);
    expect(response.status, response.text).toBe(400);
    expect(JSON.parse(response.text)).toMatchObject({ errorCode: 'REQUEST_INVALID' });
  });
});

describe('regressions found by fuzzing: dot segments on the wire', () => {
  it.each(['.', '..', '%2e', '%2E%2e'])(
    'answers GET /v1/marketfront/stores/%s/catalogset with a ProblemDetail',
    async (segment) => {
      const request = {
        method: 'GET',
        url: `/v1/marketfront/stores/${segment}/catalogset`,
        headers: { authorization: `Bearer ${context.keys.distribution}` },
        body: undefined,
        key: 'own' as const,
      };
      const response = await send(running.platform.baseUrl, request);
      checkResponse(request, response);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    },
  );
});

describe('regressions found by fuzzing: echoes of the input', () => {
  it('cuts a message quoting a 10,000-character unknown key (the detail echoed it whole)', async () => {
    const request = {
      method: 'PUT',
      url: '/v1/marketfront/webhooks',
      headers: {
        authorization: `Bearer ${context.keys.distribution}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ ['a'.repeat(10_000)]: 1, url: 'https://partner.example/hooks' }),
      key: 'own' as const,
    };
    const response = await send(running.platform.baseUrl, request);
    checkResponse(request, response);
    expect(response.status).toBe(400);
    expect(response.text.length).toBeLessThan(3_000);
  });
});

describe('regressions found by fuzzing: what the HTTP parser refuses', () => {
  it('answers a request line over the header limit with a ProblemDetail (was Fastify JSON 431)', async () => {
    const request = {
      method: 'GET',
      url: `/v1/commerce/stores/${randomUUID()}?${'e%CC%81'.repeat(4_000)}=1`,
      headers: { authorization: `Bearer ${context.keys.commerce}` },
      body: undefined,
      key: 'own' as const,
    };
    const response = await send(running.platform.baseUrl, request);
    checkResponse(request, response);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toMatchObject({ errorCode: 'REQUEST_INVALID' });
  });
});

describe('after the fuzzing', () => {
  it('fuzzed every operation the gateway serves', async () => {
    const served = operationsOf(
      (await (await fetch(`${running.platform.baseUrl}/openapi.json`)).json()) as OpenApiDocument,
    );
    expect(served.map((operation) => operation.id).sort()).toEqual(
      operations.map((operation) => operation.id).sort(),
    );
    const uncovered = served.filter((operation) => (fuzzed.get(operation.id) ?? 0) < FUZZ_RUNS);
    expect(uncovered.map((operation) => operation.id)).toEqual([]);
  });

  it('left every service process running (same PID), answering, within its memory bound', async () => {
    await running.expectHealthy('endpoints', MAX_SERVICE_RSS_MB);
    const gatewayRssMb = Math.round(process.memoryUsage().rss / 1024 / 1024);
    console.log(`[fuzz] endpoints: this process (gateway + fuzzer) RSS ${gatewayRssMb} MB`);
    const live = await fetch(`${running.platform.baseUrl}/health/live`);
    expect(live.status).toBe(200);
  });
});
