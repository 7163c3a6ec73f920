import { API_VERSIONS, LATEST_API_VERSION, parseContract, problemDetail } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { buildOpenApiDocument } from '../../src/api.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// GET /openapi.json?version=DATE (docs/guide/versioning.md#openapi-documents) over HTTP.

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(env, db);
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

const get = (query: string, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url()}/openapi.json${query}`, { headers });

describe('GET /openapi.json?version=', () => {
  it.each(API_VERSIONS.map((version) => [version]))(
    'serves the document of %s, the one buildOpenApiDocument renders, saying its version',
    async (version) => {
      const response = await get(`?version=${version}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('pcp-version')).toBe(version);
      const document = (await response.json()) as {
        info: { version: string };
        servers: { url: string }[];
      };
      expect(document.info.version).toBe(version);
      const publicBaseUrl = document.servers[0]!.url;
      expect(await buildOpenApiDocument({ publicBaseUrl, version })).toEqual(document);
    },
  );

  it('serves the newest without a version, whatever PCP-Version names', async () => {
    const headerSets: Record<string, string>[] = [{}, { 'pcp-version': API_VERSIONS[0] }];
    for (const headers of headerSets) {
      const response = await get('', headers);
      expect(response.status).toBe(200);
      expect(response.headers.get('pcp-version')).toBe(LATEST_API_VERSION);
      expect(((await response.json()) as { info: { version: string } }).info.version).toBe(
        LATEST_API_VERSION,
      );
    }
  });

  it.each([
    ['an unknown date', '?version=2026-11-02'],
    ['empty', '?version='],
    ['repeated', `?version=${API_VERSIONS[0]}&version=${API_VERSIONS[0]}`],
    ['hostile', '?version=%3Cscript%3Ealert(1)%3C%2Fscript%3E'],
    ['a NUL byte', `?version=${API_VERSIONS[0]}%00`],
    ['oversized', `?version=${'9'.repeat(6_000)}`],
  ])(
    'refuses %s with a 400 API_VERSION_INVALID ProblemDetail, never echoing it',
    async (_case, query) => {
      const response = await get(query);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const text = await response.text();
      const problem = JSON.parse(text) as { errorCode: string; detail: string };
      expect(parseContract(problemDetail, problem).success).toBe(true);
      expect(problem.errorCode).toBe('API_VERSION_INVALID');
      expect(problem.detail).toBe(
        `version must be one of the API versions: ${API_VERSIONS.join(', ')}`,
      );
      expect(text).not.toContain('<script>');
      expect(text).not.toContain('9'.repeat(100));
    },
  );
});
