/**
 * The built command as partners run it (`npx pcp-catalog`): node runs the compiled bin in a
 * child process. Build first (`npx tsc -b`); the test says so when the bin is missing.
 */
import { execFile } from 'node:child_process';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCatalogSet, withBrokenReference } from '@pcp/testing/catalog-generator';

const BIN = fileURLToPath(new URL('../bin/pcp-catalog.js', import.meta.url));
const STORE = '5a1e0000-0000-4000-8000-000000000001';

let directory: string;
let server: Server;
let base: string;
const served = new Map<string, string>();

beforeAll(async () => {
  await access(BIN).catch(() => {
    throw new Error(`${BIN} is missing: run npx tsc -b first`);
  });
  directory = await mkdtemp(join(tmpdir(), 'pcp-catalog-bin-'));
  server = createServer((request, response) => {
    const body = served.get(request.url ?? '');
    if (body === undefined) response.writeHead(404).end();
    else response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  if (directory) await rm(directory, { recursive: true, force: true });
});

/** Run the bin; resolves with its exit code and output whatever the code. */
function pcpCatalog(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

async function tempFile(name: string, content: string): Promise<string> {
  const path = join(directory, name);
  await writeFile(path, content);
  return path;
}

describe('pcp-catalog (the built bin)', () => {
  it('exits 0 with a summary for a valid file', async () => {
    const path = await tempFile(
      'valid.json',
      JSON.stringify(generateCatalogSet({ storeId: STORE, items: 30 })),
    );
    const result = await pcpCatalog('dry-run', path, '--store-id', STORE, '--currency', 'USD');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(new RegExp(`^${path}: valid CatalogSet: 30 items, `));
  });

  it('exits 1 and prints each error at FILE:LINE:COLUMN with its pointer', async () => {
    const text = JSON.stringify(
      withBrokenReference(generateCatalogSet({ storeId: STORE, items: 60 })),
      null,
      2,
    );
    const path = await tempFile('broken.json', text);
    const result = await pcpCatalog('dry-run', path);
    expect(result.code).toBe(1);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    const [, line, column] =
      /^.+:(\d+):(\d+) {2}\/items\/[^/]+\/modifierGroupIds\/0 Item /.exec(lines[0]!) ?? [];
    expect(text.split('\n')[Number(line) - 1]!.slice(Number(column) - 1)).toMatch(
      /^"deadbeef-0000-4000-9000-000000000000"/,
    );
    expect(lines[1]).toBe(`${path}: invalid CatalogSet (1 error)`);
  });

  it('exits 1 for invalid JSON, at the syntax error', async () => {
    const path = await tempFile('truncated.json', '{\n  "items": {\n');
    const result = await pcpCatalog('dry-run', path, '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      source: path,
      valid: false,
      errors: [{ path: '', message: 'Invalid JSON: close brace expected.', line: 3, column: 1 }],
      summary: null,
    });
  });

  it('exits 2 for a usage error or a file it cannot read', async () => {
    expect(await pcpCatalog('dry-run')).toMatchObject({ code: 2, stdout: '' });
    const missing = await pcpCatalog('dry-run', join(directory, 'absent.json'));
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toMatch(/cannot read .*absent\.json: no such file/);
  });

  it('dry-runs a document downloaded from a URL, and exits 2 when the URL answers 404', async () => {
    const doc = generateCatalogSet({ storeId: STORE, items: 20 });
    served.set('/catalog.json', JSON.stringify({ ...doc, currency: 'EUR' }));
    const url = `${base}/catalog.json`;
    const result = await pcpCatalog('dry-run', url, '--currency', 'USD');
    expect(result).toMatchObject({ code: 1, stderr: '' });
    expect(result.stdout).toMatch(
      new RegExp(`^${url}:1:\\d+  /currency currency EUR does not match`),
    );

    served.set('/good.json', JSON.stringify(doc));
    expect(await pcpCatalog('dry-run', `${base}/good.json`)).toMatchObject({ code: 0 });
    const missing = await pcpCatalog('dry-run', `${base}/missing.json`);
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toContain('the server answered HTTP 404');
  });
});
