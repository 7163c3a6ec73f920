import { validateCatalogSet } from '@pcp/catalog-validation';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCatalogSet, withBrokenReference } from '@pcp/testing/catalog-generator';
import { dryRunCatalogSet } from '../src/catalog-dry-run/dry-run.js';
import { readCatalogSource } from '../src/catalog-dry-run/read-source.js';
import { main } from '../src/cli/dry-run-command.js';

const STORE = '5a1e0000-0000-4000-8000-000000000001';
/** withBrokenReference's dangling id (@pcp/testing/catalog-generator). */
const MISSING_ID = 'deadbeef-0000-4000-9000-000000000000';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests mutate documents freely
type Doc = Record<string, any>;

function document(items = 40): Doc {
  return generateCatalogSet({ storeId: STORE, items });
}

/** The 1-based line and column where `needle` first starts in `text`. */
function positionOf(text: string, needle: string, from = 0): { line: number; column: number } {
  const offset = text.indexOf(needle, from);
  if (offset < 0) throw new Error(`${needle} not in text`);
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}

describe('dryRunCatalogSet', () => {
  it('accepts a valid document and counts it', () => {
    const doc = document(40);
    expect(dryRunCatalogSet(JSON.stringify(doc))).toEqual({
      valid: true,
      errors: [],
      counts: {
        items: Object.keys(doc.items).length,
        sections: Object.keys(doc.sections).length,
        modifierGroups: Object.keys(doc.modifierGroups).length,
        catalogs: Object.keys(doc.catalogs).length,
      },
    });
  });

  it('reports exactly the errors ingest’s validator reports, each placed in the text', () => {
    const doc = withBrokenReference(generateCatalogSet({ storeId: STORE, items: 60 })) as Doc;
    const [firstItem] = Object.keys(doc.items);
    doc.items[firstItem!].basePrice = 1.005;
    doc.currency = 'EUR';
    const text = JSON.stringify(doc, null, 2);
    const result = dryRunCatalogSet(text, { storeId: STORE, currency: 'USD' });
    const validated = validateCatalogSet(JSON.parse(text), { storeId: STORE, currency: 'USD' });
    if (validated.ok) throw new Error('expected the validator to refuse the document');
    expect(result.valid).toBe(false);
    expect(result.errors.map(({ path, message }) => ({ path, message }))).toEqual(validated.errors);
    expect(result.errors.map((error) => error.path)).toEqual([
      '/currency',
      expect.stringMatching(/^\/items\/[^/]+\/modifierGroupIds\/0$/) as string,
      `/items/${firstItem}/basePrice`,
    ]);
    const [currency, reference, price] = result.errors;
    expect(currency).toMatchObject(positionOf(text, '"EUR"'));
    // The array element that names the missing group, not its list or item.
    expect(reference).toMatchObject(positionOf(text, `"${MISSING_ID}"`));
    expect(reference!.message).toMatch(/Fix the reference\.$/);
    const itemAt = text.indexOf(`"${firstItem}": {`);
    expect(price).toMatchObject(positionOf(text, '1.005', itemAt));
  });

  it('places a missing property at the object that lacks it', () => {
    const doc = document();
    const [itemId] = Object.keys(doc.items);
    delete doc.items[itemId!].basePrice;
    const text = JSON.stringify(doc, null, 2);
    const [error] = dryRunCatalogSet(text).errors;
    expect(error).toMatchObject({ path: `/items/${itemId}/basePrice` });
    // The value of the item's key: the `{` after `"<id>": `.
    const key = positionOf(text, `"${itemId}": {`);
    expect(error).toMatchObject({ line: key.line, column: key.column + `"${itemId}": `.length });
  });

  it('finds keys written in upper case (GUIDs compare case-insensitively)', () => {
    const doc = document();
    const [groupId] = Object.keys(doc.modifierGroups);
    doc.modifierGroups[groupId!].minimumAllowed = 5;
    doc.modifierGroups[groupId!].maximumAllowed = 1;
    const text = JSON.stringify(doc, null, 2).replace(/"[0-9a-f-]{36}"/g, (id) => id.toUpperCase());
    const [error] = dryRunCatalogSet(text).errors;
    expect(error?.path).toBe(`/modifierGroups/${groupId}/maximumAllowed`);
    const group = text.indexOf(`"${groupId!.toUpperCase()}": {`);
    // The value, not the property name.
    const property = positionOf(text, '"maximumAllowed": 1', group);
    expect(error).toMatchObject({
      line: property.line,
      column: property.column + '"maximumAllowed": '.length,
    });
  });

  it('unescapes ~0 and ~1 in pointers to find the key', () => {
    const doc = document();
    doc.sections['a/b~c'] = { sectionId: 'a/b~c', name: 'Odd' };
    const text = JSON.stringify(doc, null, 2);
    const errors = dryRunCatalogSet(text).errors;
    expect(errors[0]).toMatchObject({
      path: '/sections/a~1b~0c/sectionId',
      ...positionOf(text, '"a/b~c"', text.indexOf('"sectionId": "a/b~c"')),
    });
  });

  it('checks storeId and currency only when asked', () => {
    const text = JSON.stringify({ ...document(), storeId: '5a1e0000-0000-4000-8000-000000000009' });
    expect(dryRunCatalogSet(text).valid).toBe(true);
    expect(dryRunCatalogSet(text, { storeId: STORE.toUpperCase() }).errors).toEqual([
      expect.objectContaining({ path: '/storeId', line: 1 }),
    ]);
    expect(dryRunCatalogSet(text, { currency: 'USD' }).valid).toBe(true);
    expect(dryRunCatalogSet(text, { currency: 'JPY' }).errors.map((error) => error.path)).toEqual([
      '/currency',
    ]);
  });

  it.each([
    ['a missing comma', '{\n  "a": 1\n  "b": 2\n}', 3, 3, 'comma expected'],
    ['a trailing comma', '{\n  "a": [1, 2,]\n}', 2, 14, 'value expected'],
    ['a comment', '{\n  // no\n  "a": 1\n}', 2, 3, 'invalid comment token'],
    ['an empty file', '', 1, 1, 'value expected'],
    ['a truncated document', '{"items": {"a": ', 1, 17, 'value expected'],
  ])('reports invalid JSON (%s) at the syntax error', (_, text, line, column, reason) => {
    expect(dryRunCatalogSet(text)).toEqual({
      valid: false,
      errors: [{ path: '', message: `Invalid JSON: ${reason}.`, line, column }],
      counts: null,
    });
  });

  it('accepts a byte order mark as ingest does, keeping columns', () => {
    const doc = document();
    doc.currency = 'EUR';
    const text = `\uFEFF${JSON.stringify(doc)}`;
    const [error] = dryRunCatalogSet(text, { currency: 'USD' }).errors;
    expect(error).toMatchObject({ path: '/currency', ...positionOf(text, '"EUR"') });
  });
});

describe('readCatalogSource', () => {
  let directory: string;
  let server: Server;
  let base: string;
  const routes = new Map<string, RequestListener>();

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'pcp-dry-run-'));
    server = createServer((request, response) => {
      const route = routes.get(request.url ?? '');
      if (route) route(request, response);
      else response.writeHead(404).end('not here');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(directory, { recursive: true, force: true });
  });

  it('reads a file, and refuses one over the limit before reading it', async () => {
    const path = join(directory, 'doc.json');
    await writeFile(path, '{"x": "é"}');
    expect(await readCatalogSource(path, { timeoutMs: 1_000 })).toEqual({
      ok: true,
      text: '{"x": "é"}',
    });
    expect(await readCatalogSource(path, { timeoutMs: 1_000, maxBytes: 5 })).toMatchObject({
      ok: false,
      reason: 'too_large',
    });
    expect(await readCatalogSource(join(directory, 'none.json'), { timeoutMs: 1_000 })).toEqual({
      ok: false,
      reason: 'unreadable',
      message: 'no such file',
    });
  });

  it('downloads a URL', async () => {
    routes.set('/doc.json', (_request, response) => response.end('{"ok": true}'));
    expect(await readCatalogSource(`${base}/doc.json`, { timeoutMs: 2_000 })).toEqual({
      ok: true,
      text: '{"ok": true}',
    });
  });

  it('calls an HTTP error status unreadable without echoing the body', async () => {
    expect(await readCatalogSource(`${base}/missing.json`, { timeoutMs: 2_000 })).toEqual({
      ok: false,
      reason: 'unreadable',
      message: 'the server answered HTTP 404',
    });
  });

  it('stops reading a body without Content-Length once it passes the limit', async () => {
    let written = 0;
    routes.set('/endless.json', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const write = () => {
        while (!response.destroyed && written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', write);
        }
        response.end();
      };
      write();
    });
    const result = await readCatalogSource(`${base}/endless.json`, {
      timeoutMs: 5_000,
      maxBytes: 1024 * 1024,
    });
    expect(result).toMatchObject({ ok: false, reason: 'too_large' });
    // The server was cut off long before it could send its 64 MB.
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  it('refuses a declared Content-Length over the limit', async () => {
    routes.set('/big.json', (_request, response) => {
      response.writeHead(200, { 'content-length': String(2 * 1024 * 1024) });
      response.write('{');
    });
    expect(
      await readCatalogSource(`${base}/big.json`, { timeoutMs: 2_000, maxBytes: 1024 * 1024 }),
    ).toMatchObject({ ok: false, reason: 'too_large' });
  });

  it('gives up on a server that never answers', async () => {
    routes.set('/silent.json', () => undefined);
    expect(await readCatalogSource(`${base}/silent.json`, { timeoutMs: 300 })).toEqual({
      ok: false,
      reason: 'unreadable',
      message: 'the download did not finish within 0.3 s',
    });
  });
});

describe('pcp-catalog main', () => {
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'pcp-dry-run-main-'));
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  async function run(...argv: string[]) {
    let stdout = '';
    let stderr = '';
    const code = await main(argv, {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
    });
    return { code, stdout, stderr };
  }

  it.each([
    [[], /no command/],
    [['check', 'x.json'], /unknown command check/],
    [['dry-run'], /exactly one FILE or URL/],
    [['dry-run', 'a.json', 'b.json'], /exactly one FILE or URL/],
    [['dry-run', 'a.json', '--verbose'], /Unknown option '--verbose'/],
    [['dry-run', 'a.json', '--store-id', 'not-a-guid'], /--store-id must be a GUID/],
    [['dry-run', 'a.json', '--currency', 'dollars'], /--currency must be an ISO 4217 code/],
  ])('answers usage errors (%j) with exit 2 and the usage on stderr', async (argv, problem) => {
    const result = await run(...argv);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(problem);
    expect(result.stderr).toContain('Usage: pcp-catalog dry-run FILE|URL');
  });

  it('prints the help with exit 0', async () => {
    const result = await run('--help');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^Usage: pcp-catalog dry-run/);
  });

  it('prints a summary of a valid document, noting what it did not check', async () => {
    const doc = document(40);
    const path = join(directory, 'valid.json');
    await writeFile(path, JSON.stringify(doc));
    const groups = Object.keys(doc.modifierGroups).length;
    const unchecked = await run('dry-run', path);
    expect(unchecked).toMatchObject({ code: 0, stderr: '' });
    expect(unchecked.stdout).toBe(
      `${path}: valid CatalogSet: 40 items, ${Object.keys(doc.sections).length} section${Object.keys(doc.sections).length === 1 ? '' : 's'}, ` +
        `${groups} modifier groups, ${Object.keys(doc.catalogs).length} catalogs; ` +
        'not checked against a store: storeId (--store-id), currency (--currency)\n',
    );
    const checked = await run('dry-run', path, '--store-id', STORE, '--currency', 'usd');
    expect(checked.code).toBe(0);
    expect(checked.stdout).not.toContain('not checked');
  });

  it('prints each error as FILE:LINE:COLUMN  pointer message, then a count; --json one object', async () => {
    const doc = document();
    doc.currency = 'EUR';
    const text = JSON.stringify(doc, null, 2);
    const path = join(directory, 'eur.json');
    await writeFile(path, text);
    const { line, column } = positionOf(text, '"EUR"');
    expect(await run('dry-run', path, '--currency', 'USD')).toEqual({
      code: 1,
      stdout:
        `${path}:${line}:${column}  /currency currency EUR does not match the store's currency USD.\n` +
        `${path}: invalid CatalogSet (1 error)\n`,
      stderr: '',
    });
    const json = await run('dry-run', '--json', path, '--currency', 'USD');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      source: path,
      valid: false,
      errors: [
        {
          path: '/currency',
          message: "currency EUR does not match the store's currency USD.",
          line,
          column,
        },
      ],
      summary: null,
    });
  });

  it('calls a file that cannot be read a usage problem (exit 2), not an invalid document', async () => {
    const result = await run('dry-run', join(directory, 'absent.json'));
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `pcp-catalog: cannot read ${join(directory, 'absent.json')}: no such file\n`,
    });
  });
});
