import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '../test-support/environment.js';
import { startPlatform, type TestPlatform } from '../test-support/platform.js';

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

  it('passes `redocly lint` without errors', async () => {
    const result = await run(
      join(root, 'node_modules', '.bin', 'redocly'),
      ['lint', documentPath, '--format', 'json', '--config', join(root, 'redocly.yaml')],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: { stdout?: string; code?: number }) => error);
    const report = JSON.parse(result.stdout ?? '{}') as {
      totals?: { errors: number };
      problems?: { ruleId: string; message: string; severity: string }[];
    };
    const errors = (report.problems ?? []).filter((problem) => problem.severity === 'error');
    expect(errors).toEqual([]);
    expect(report.totals?.errors).toBe(0);
  });

  it('generates TypeScript types with openapi-typescript', async () => {
    const types = astToString(await openapiTS(new URL(`file://${documentPath}`)));
    expect(types).toContain('"/v1/marketfront/carts/add"');
    expect(types).toMatch(/PricedLineItem: \{/);
  });
});
