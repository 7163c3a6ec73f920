import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ProblemDetail } from '@pcp/contracts';
import { buildOpenApiDocument } from '@pcp/gateway';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';

const root = join(import.meta.dirname, '..');
const run = promisify(execFile);

let env: TestEnvironment;
let platform: TestPlatform;
let directory: string;
let documentPath: string;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document as served
let document: any;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env);
  document = await (await fetch(`${platform.baseUrl}/openapi.json`)).json();
  directory = await mkdtemp(join(tmpdir(), 'pcp-openapi-'));
  documentPath = join(directory, 'openapi.json');
  await writeFile(documentPath, JSON.stringify(document));
});

afterAll(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
  await platform?.stop();
  await env?.cleanup();
});

/** Every `$ref` in the document, with where it was found. */
function refsOf(value: unknown, path = ''): { ref: string; at: string }[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => refsOf(item, `${path}/${index}`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) =>
    key === '$ref' && typeof child === 'string'
      ? [{ ref: child, at: path }]
      : refsOf(child, `${path}/${key}`),
  );
}

function resolve(pointer: string): unknown {
  return pointer
    .slice(2)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>(
      (node, token) =>
        typeof node === 'object' && node !== null
          ? (node as Record<string, unknown>)[token]
          : undefined,
      document,
    );
}

describe('the served OpenAPI document, as a partner generating a client uses it', () => {
  it('resolves every $ref, including the recursive priced line of the cart routes', () => {
    const refs = refsOf(document);
    expect(refs.length).toBeGreaterThan(0);
    const dangling = refs.filter(({ ref }) => !ref.startsWith('#/') || resolve(ref) === undefined);
    expect(dangling).toEqual([]);
    expect(document.components.schemas).toHaveProperty('PricedLineItem');
  });

  it('passes `redocly lint` with no errors and no warnings', async () => {
    const result = await run(
      join(root, 'node_modules', '.bin', 'redocly'),
      ['lint', documentPath, '--format', 'json', '--config', join(root, 'redocly.yaml')],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    ).catch((error: { stdout?: string; code?: number }) => error);
    const report = JSON.parse(result.stdout ?? '{}') as {
      totals?: { errors: number; warnings: number };
      problems?: { ruleId: string; message: string; severity: string }[];
    };
    expect((report.problems ?? []).map(({ ruleId, message }) => `${ruleId}: ${message}`)).toEqual(
      [],
    );
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('is the document buildOpenApiDocument renders without a server', async () => {
    const publicBaseUrl = document.servers[0].url as string;
    expect(await buildOpenApiDocument({ publicBaseUrl })).toEqual(document);
  });

  it('links the CatalogSet JSON Schema, which the gateway serves to anyone', async () => {
    const link = new URL(
      document.tags.find((tag: { name: string }) => tag.name === 'Commerce: catalog').externalDocs
        .url,
    );
    expect(link.pathname).toBe('/schemas/catalogset.json');
    const response = await fetch(`${platform.baseUrl}${link.pathname}`);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { title: string }).title).toBe('CatalogSet');
  });

  it("serves the page a ProblemDetail's type names: JSON, or HTML to a browser", async () => {
    const problem = (await (
      await fetch(`${platform.baseUrl}/v1/commerce/stores`)
    ).json()) as ProblemDetail;
    expect(problem.errorCode).toBe('UNAUTHORIZED');
    const page = new URL(problem.type);
    expect(page.pathname).toBe('/docs/errors/UNAUTHORIZED');
    const json = await fetch(`${platform.baseUrl}${page.pathname}`);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await json.json()).toMatchObject({ errorCode: 'UNAUTHORIZED', status: 401 });
    const html = await fetch(`${platform.baseUrl}${page.pathname}`, {
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await html.text()).toContain('Bearer &lt;key&gt;');
    const index = (await (await fetch(`${platform.baseUrl}/docs/errors`)).json()) as {
      errors: unknown[];
    };
    expect(index.errors.length).toBeGreaterThan(30);
  });

  it('answers an unknown or hostile error code with a 404 ProblemDetail', async () => {
    for (const code of ['NOPE', '%3Cscript%3Ealert(1)%3C%2Fscript%3E', '..%2F..%2Fopenapi.json']) {
      const response = await fetch(`${platform.baseUrl}/docs/errors/${code}`, {
        headers: { accept: 'text/html' },
      });
      expect(response.status, code).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await response.json()) as ProblemDetail;
      expect(problem.errorCode).toBe('NOT_FOUND');
      expect(response.headers.get('x-request-id')).toBe(problem.requestId);
    }
  });

  it('generates TypeScript types with openapi-typescript', async () => {
    const types = astToString(await openapiTS(new URL(`file://${documentPath}`)));
    expect(types).toContain('"/v1/marketfront/carts/add"');
    expect(types).toMatch(/PricedLineItem: \{/);
  });
});
