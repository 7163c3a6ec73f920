/**
 * Catalog ingest end to end, the unhappy paths: every way a download or a document can fail
 * ends the run `failed` with partner-safe errors at RFC 6901 paths
 * (docs/guide/catalogs.md#validation), the status resource walks the spec's state table, and the
 * commerce/marketfront endpoints answer bad input and unknown ids with ProblemDetail
 * (docs/guide/errors.md#problemdetail).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateCatalogSet,
  withBrokenReference,
  type GeneratedCatalogSet,
} from '@pcp/testing/catalog-generator';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { countsBy, growth } from '@pcp/testing/metrics';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { createStore } from './ingest.js';

/** The whole file runs with a short total download timeout (slow-server tests). */
const FETCH_TIMEOUT_MS = 1_500;
/** withBrokenReference's dangling id (@pcp/testing/catalog-generator). */
const MISSING_ID = 'deadbeef-0000-4000-9000-000000000000';
const MB = 1024 * 1024;

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
type Partner = { partnerId: string; apiKey: string };
let commerce: Partner;
let otherCommerce: Partner;
let distribution: Partner;

beforeAll(async () => {
  env = await createTestEnvironment();
  // This file makes well over 100 writes (store PUTs, notifications) a minute; raise the
  // per-partner limits so rate limiting never decides an outcome here.
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000', RATE_LIMIT_READS_PER_MIN: '100000' },
    catalogEnv: { CATALOG_FETCH_TIMEOUT_MS: String(FETCH_TIMEOUT_MS) },
  });
  host = await startCatalogHost();
  commerce = await platform.newPartner('commerce');
  otherCommerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution');
});

afterAll(async () => {
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

function newStore(partner: Partner = commerce): Promise<string> {
  return createStore(platform.baseUrl, partner.apiKey);
}

function notify(storeId: string, callbackUrl: string, apiKey = commerce.apiKey) {
  return call(platform.baseUrl, 'POST', `/v1/commerce/catalogset-notification?storeId=${storeId}`, {
    apiKey,
    body: { callbackUrl },
  });
}

const statusPath = (storeId: string, runId: string) =>
  `/v1/commerce/stores/${storeId}/catalog-ingest/${runId}/status`;

function readStatus(statusUrl: string, apiKey = commerce.apiKey) {
  return call(platform.baseUrl, 'GET', statusUrl, { apiKey });
}

async function waitForStatus(statusUrl: string, pattern: RegExp): Promise<HttpResult> {
  let last: HttpResult | undefined;
  await expect
    .poll(
      async () => {
        last = await readStatus(statusUrl);
        return last.body.status;
      },
      { timeout: 15_000, interval: 25 },
    )
    .toMatch(pattern);
  return last!;
}

const waitForTerminal = (statusUrl: string) => waitForStatus(statusUrl, /^(succeeded|failed)$/);

/** Notify, check the 202, and wait until the run is terminal. */
async function ingest(storeId: string, callbackUrl: string) {
  const accepted = await notify(storeId, callbackUrl);
  expect(accepted.status).toBe(202);
  const runId: string = accepted.body.catalogIngestId;
  const done = await waitForTerminal(accepted.body.statusUrl);
  expect(done.status).toBe(200);
  expect(done.body.catalogIngestId).toBe(runId);
  expect(done.body.storeId).toBe(storeId);
  return { runId, done: done.body, terminal: done };
}

interface IngestError {
  message: string;
  path: string;
}

/**
 * The run failed with partner-safe errors: each matches `message`, the paths are exactly
 * `paths` (in any order), timestamps are ordered, and nothing internal leaks.
 */
function expectFailed(
  result: { done: { status: string; errors: IngestError[]; createdAt: string; updatedAt: string } },
  message: string | RegExp,
  paths: string[],
) {
  const { done } = result;
  expect(done.status).toBe('failed');
  expect(done).not.toHaveProperty('summary');
  expect(done.errors.length).toBeGreaterThan(0);
  for (const error of done.errors) {
    expect(Object.keys(error).sort()).toEqual(['message', 'path']);
    expect(error.message).toEqual(expect.any(String));
    expect(error.message).toMatch(message);
    expect(error.path === '' || error.path.startsWith('/')).toBe(true);
    expectPartnerSafe(error.message);
  }
  expect(done.errors.map((error) => error.path).sort()).toEqual([...paths].sort());
  expect(Date.parse(done.updatedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt));
}

/** No host address, exception name or stack line in a partner-facing text. */
function expectPartnerSafe(text: string) {
  expect(text).not.toContain('127.0.0.1');
  expect(text).not.toContain(host.base);
  expect(text).not.toMatch(/\b\w*Error:/);
  expect(text).not.toMatch(/(^|\n)\s*at\s/);
  expect(text).not.toMatch(/\.(ts|js|mjs):\d+/);
}

function expectProblem(response: HttpResult, status: number, errorCode: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({
    type: expect.stringMatching(new RegExp(`/errors/${errorCode}$`)),
    status,
    detail: expect.any(String),
    errorCode,
  });
  expectPartnerSafe(response.body.detail);
}

/** A port on 127.0.0.1 that nothing listens on any more. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A small valid CatalogSet: one catalog, two nested sections, an item with one modifier. */
function smallDocument(storeId: string) {
  const [catalogId, mains, specials, burger, cheese, extras] = Array.from({ length: 6 }, () =>
    randomUUID(),
  ) as [string, string, string, string, string, string];
  return {
    ids: { catalogId, mains, specials, burger, cheese, extras },
    document: {
      catalogSetId: randomUUID(),
      storeId,
      currency: 'USD',
      catalogs: {
        [catalogId]: {
          catalogId,
          name: 'All day',
          sectionIds: [mains],
          availability: [{ dayOfWeek: 'Monday', start: '00:00:00', end: '00:00:00' }],
        },
      },
      sections: {
        [mains]: { sectionId: mains, name: 'Mains', sectionIds: [specials], itemIds: [burger] },
        [specials]: { sectionId: specials, name: 'Specials', sectionIds: [] as string[] },
      },
      items: {
        [burger]: {
          itemId: burger,
          name: 'Burger',
          basePrice: 9.5,
          isAvailable: true,
          modifierGroupIds: [extras],
        },
        [cheese]: {
          itemId: cheese,
          name: 'Cheese',
          basePrice: 1,
          modifierGroupIds: [] as string[],
        },
      },
      modifierGroups: {
        [extras]: {
          modifierGroupId: extras,
          name: 'Extras',
          minimumAllowed: 0,
          maximumAllowed: 1,
          itemIds: [cheese],
        },
      },
    },
  };
}

/** The ids of items listed in sections (top-level items, not modifier options). */
function topLevelItemIds(document: GeneratedCatalogSet): string[] {
  return Object.values(document.sections).flatMap((section) => section.itemIds);
}

const clone = <T>(value: T): T => structuredClone(value);

/**
 * Keep writing 1 MB chunks (one buffer, reused; backpressure honoured) until the client goes
 * away; resolves with the bytes handed to the socket.
 */
function pumpUntilClosed(response: ServerResponse): Promise<number> {
  const chunk = Buffer.alloc(MB, 0x20);
  let written = 0;
  let closed = false;
  const done = new Promise<number>((resolve) =>
    response.once('close', () => {
      closed = true;
      resolve(written);
    }),
  );
  const pump = (): void => {
    while (!closed) {
      written += chunk.length;
      if (!response.write(chunk)) {
        response.once('drain', pump);
        return;
      }
    }
  };
  pump();
  return done;
}

describe('catalog ingest: download failures', () => {
  it('fails an unreachable callbackUrl (nothing listens on the port)', async () => {
    const storeId = await newStore();
    const port = await closedPort();
    const result = await ingest(storeId, `http://127.0.0.1:${port}/catalog.json`);
    expectFailed(result, /^callbackUrl could not be reached$/, ['']);
  });

  it('fails a callbackUrl answering 404 or 500, without echoing the partner’s error page', async () => {
    const storeId = await newStore();
    const missing = await ingest(storeId, `${host.base}/nothing-here-${storeId}.json`);
    expectFailed(missing, /^callbackUrl answered HTTP 404$/, ['']);

    const broken = host.route(`/boom-${storeId}.json`, (_request, response) => {
      response
        .writeHead(500, { 'content-type': 'text/plain' })
        .end('TypeError: boom at 127.0.0.1\n    at handler (/srv/app.js:12:3)\n');
    });
    expectFailed(await ingest(storeId, broken), /^callbackUrl answered HTTP 500$/, ['']);
  });

  it('fails a body that is not JSON: truncated JSON and an HTML page', async () => {
    const storeId = await newStore();
    const text = JSON.stringify(generateCatalogSet({ storeId, items: 20 }));
    const truncated = host.serveJson(`/truncated-${storeId}.json`, text.slice(0, text.length / 2));
    expectFailed(await ingest(storeId, truncated), /^callbackUrl did not return valid JSON/, ['']);

    const html = host.route(`/html-${storeId}`, (_request, response) => {
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!DOCTYPE html><html><body><h1>Welcome to our shop</h1></body></html>');
    });
    expectFailed(await ingest(storeId, html), /^callbackUrl did not return valid JSON/, ['']);
    // Nothing was ever activated for the store.
    const served = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${storeId}/catalogset`,
      { apiKey: distribution.apiKey },
    );
    expectProblem(served, 404, 'CATALOGSET_NOT_FOUND');
  });

  it('fails valid JSON that is not a CatalogSet object at the document root', async () => {
    const storeId = await newStore();
    const url = host.serveJson(`/array-${storeId}.json`, '[]');
    expectFailed(await ingest(storeId, url), /^The document: expected object/, ['']);
  });

  it('never echoes the downloaded body in the invalid-JSON message', async () => {
    for (const body of [
      'Error: boom at 127.0.0.1\n    at f (/srv/a.js:1:1)',
      'ok 127.0.0.1',
      '{"secret": "internal-token"',
    ]) {
      const storeId = await newStore();
      const url = host.route(`/echo-${storeId}.json`, (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      });
      const result = await ingest(storeId, url);
      expectFailed(result, /^callbackUrl did not return valid JSON/, ['']);
      expect(result.done.errors[0]!.message).not.toMatch(/boom|ok |internal-token|secret/);
    }
  });

  it('fails a document over 50 MB streamed without Content-Length and stops reading it', async () => {
    const storeId = await newStore();
    let written: Promise<number> | undefined;
    const url = host.route(`/huge-${storeId}.json`, (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"padding":"');
      written = pumpUntilClosed(response);
    });
    const result = await ingest(storeId, url);
    expectFailed(result, /^the document is larger than 50 MB$/, ['']);
    // The service hung up on the host instead of reading on.
    expect(written).toBeDefined();
    const total = await written!;
    expect(total).toBeGreaterThan(50 * MB - 2 * MB);
    expect(total).toBeLessThan(50 * MB + 64 * MB);
  });

  it('fails a Content-Length over 50 MB before reading the body', async () => {
    const storeId = await newStore();
    const url = host.route(`/declared-${storeId}.json`, (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': 60_000_000 });
      response.write('{"catalogSetId":');
    });
    expectFailed(await ingest(storeId, url), /^the document is larger than 50 MB$/, ['']);
  });

  it('fails a small gzip body that inflates past 50 MB (the cap counts decoded bytes)', async () => {
    const storeId = await newStore();
    // About 60 MB of spaces, compressed in 1 MB steps into a few tens of KB.
    const compressed = await new Promise<Buffer>((resolve, reject) => {
      const gzip = createGzip();
      const parts: Buffer[] = [];
      gzip.on('data', (part: Buffer) => parts.push(part));
      gzip.on('end', () => resolve(Buffer.concat(parts)));
      gzip.on('error', reject);
      const chunk = Buffer.alloc(MB, 0x20);
      let left = 60;
      const feed = (): void => {
        while (left > 0) {
          left -= 1;
          if (!gzip.write(chunk)) {
            gzip.once('drain', feed);
            return;
          }
        }
        gzip.end();
      };
      feed();
    });
    expect(compressed.length).toBeLessThan(MB);
    const url = host.route(`/bomb-${storeId}.json`, (_request, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(compressed);
    });
    expectFailed(await ingest(storeId, url), /^the document is larger than 50 MB$/, ['']);
  });

  it.each([
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data'],
    ['a private network address', 'http://10.0.0.1/'],
    ['the metadata address as an IPv4-mapped IPv6 literal', 'http://[::ffff:169.254.169.254]/'],
    ['the metadata address written as one decimal number', 'http://2852039166/latest/meta-data'],
    ['a CGNAT address', 'http://100.64.0.1/'],
    ['the unspecified address (which reaches this host)', 'http://0.0.0.0:{port}/x.json'],
    ['the IPv6 loopback', 'http://[::1]:{port}/x.json'],
  ])('fails a redirect to %s', async (_label, target) => {
    const location = target.replace('{port}', new URL(host.base).port);
    const storeId = await newStore();
    let redirected = 0;
    const url = host.route(`/moved-${storeId}.json`, (_request, response) => {
      redirected += 1;
      response.writeHead(302, { location }).end();
    });
    const result = await ingest(storeId, url);
    expectFailed(
      result,
      /^callbackUrl redirect target does not resolve to a publicly routable address$/,
      [''],
    );
    expect(redirected).toBe(1);
    expect(result.done.errors[0].message).not.toContain(new URL(location).hostname);
  });

  it('words a host that does not resolve like one that resolves to a private address', async () => {
    // Distinct messages would let a partner probe the platform's internal DNS names.
    const messages: string[] = [];
    for (const target of ['http://does-not-exist.invalid/x.json', 'http://10.0.0.1/x.json']) {
      const storeId = await newStore();
      const direct = await ingest(storeId, target);
      const redirect = host.route(`/to-${storeId}.json`, (_request, response) => {
        response.writeHead(302, { location: target }).end();
      });
      const redirected = await ingest(storeId, redirect);
      for (const result of [direct, redirected]) {
        expectFailed(
          result,
          /^callbackUrl (redirect target )?does not resolve to a publicly routable address$/,
          [''],
        );
        messages.push(result.done.errors[0].message);
      }
    }
    expect(messages).toEqual([
      'callbackUrl does not resolve to a publicly routable address',
      'callbackUrl redirect target does not resolve to a publicly routable address',
      'callbackUrl does not resolve to a publicly routable address',
      'callbackUrl redirect target does not resolve to a publicly routable address',
    ]);
  });

  it('fails a redirect loop after at most 3 redirects', async () => {
    const storeId = await newStore();
    let hops = 0;
    const path = `/loop-${storeId}.json`;
    const url = host.route(path, (_request, response) => {
      hops += 1;
      response.writeHead(302, { location: path }).end();
    });
    const result = await ingest(storeId, url);
    expectFailed(result, /^too many redirects \(more than 3\)$/, ['']);
    expect(hops).toBe(4);
  });

  it('fails a server that sends headers and then never finishes the body (total timeout)', async () => {
    const storeId = await newStore();
    let hungUp: Promise<void> | undefined;
    const url = host.route(`/slow-${storeId}.json`, (_request, response) => {
      hungUp = new Promise((resolve) => response.once('close', () => resolve()));
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"catalogSetId":');
    });
    const result = await ingest(storeId, url);
    expectFailed(result, /^the download from callbackUrl did not finish within 1\.5 seconds$/, [
      '',
    ]);
    await hungUp;
  });

  it('fails a server that accepts the connection but never answers (total timeout)', async () => {
    const storeId = await newStore();
    let requested = false;
    const url = host.route(`/silent-${storeId}.json`, () => {
      requested = true;
    });
    const result = await ingest(storeId, url);
    expectFailed(result, /^callbackUrl did not answer within 1\.5 seconds$/, ['']);
    expect(requested).toBe(true);
  });

  it.each([
    ['an ftp URL', 'ftp://example.com/x', /^callbackUrl must use http or https$/],
    ['text that is not a URL', 'not a url', /^callbackUrl is not a valid URL$/],
    ['a URL with credentials', 'http://user:secret@127.0.0.1/x', /must not contain credentials/],
  ])('accepts %s with 202 and then fails the run', async (_label, callbackUrl, message) => {
    const storeId = await newStore();
    const result = await ingest(storeId, callbackUrl);
    expectFailed(result, message, ['']);
    expect(result.done.errors[0].message).not.toContain('secret');
  });
});

describe('catalog ingest: document failures', () => {
  it('fails a document with an item without basePrice at /items/<id>/basePrice', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 20 });
    const [itemId] = topLevelItemIds(document);
    delete (document.items[itemId!] as Partial<GeneratedCatalogSet['items'][string]>).basePrice;
    const result = await ingest(storeId, host.serveJson(`/no-price-${storeId}.json`, document));
    expectFailed(result, /^basePrice is required\.$/, [`/items/${itemId}/basePrice`]);
  });

  it('fails wrong types, reporting every error at its pointer', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 20 });
    const [first, second] = topLevelItemIds(document) as [string, string];
    Object.assign(document.items[first]!, { basePrice: '9.50' });
    Object.assign(document.items[second]!, { isAvailable: 'yes' });
    const result = await ingest(storeId, host.serveJson(`/types-${storeId}.json`, document));
    expectFailed(result, /^(basePrice|isAvailable): .*expected/, [
      `/items/${first}/basePrice`,
      `/items/${second}/isAvailable`,
    ]);
    const byPath = new Map<string, IngestError>(
      result.done.errors.map((error: IngestError) => [error.path, error]),
    );
    expect(byPath.get(`/items/${first}/basePrice`)!.message).toMatch(/number/);
    expect(byPath.get(`/items/${second}/isAvailable`)!.message).toMatch(/boolean/);
  });

  it('fails a broken reference at its pointer and tells the partner to quote the catalogIngestId', async () => {
    const storeId = await newStore();
    const document = withBrokenReference(generateCatalogSet({ storeId, items: 40 }));
    const broken = Object.values(document.items).find(
      (item) => item.modifierGroupIds[0] === MISSING_ID,
    );
    expect(broken).toBeDefined();
    const result = await ingest(storeId, host.serveJson(`/dangling-${storeId}.json`, document));
    expectFailed(result, new RegExp(`${MISSING_ID}.*catalogIngestId ${result.runId}`), [
      `/items/${broken!.itemId}/modifierGroupIds/0`,
    ]);
    expect(result.done.errors[0].message).toMatch(/contact support/);
  });

  it('accepts the small hand-built document (control for the cycle tests)', async () => {
    const storeId = await newStore();
    const { document } = smallDocument(storeId);
    const result = await ingest(storeId, host.serveJson(`/small-${storeId}.json`, document));
    expect(result.done).toMatchObject({
      status: 'succeeded',
      errors: [],
      summary: { items: 2, sections: 2, modifierGroups: 1, added: 2, removed: 0 },
    });
  });

  it('fails a section cycle at the back edge', async () => {
    const storeId = await newStore();
    const { document, ids } = smallDocument(storeId);
    document.sections[ids.specials]!.sectionIds = [ids.mains];
    const result = await ingest(
      storeId,
      host.serveJson(`/section-cycle-${storeId}.json`, document),
    );
    expectFailed(result, /sections must not nest in a cycle/, [
      `/sections/${ids.specials}/sectionIds/0`,
    ]);
  });

  it('fails a modifier cycle at the back edge', async () => {
    const storeId = await newStore();
    const { document, ids } = smallDocument(storeId);
    // The option offers the group it is offered in: burger → extras → cheese → extras.
    document.items[ids.cheese]!.modifierGroupIds = [ids.extras];
    const result = await ingest(storeId, host.serveJson(`/mod-cycle-${storeId}.json`, document));
    expectFailed(result, /modifiers must not nest in a cycle/, [
      `/items/${ids.cheese}/modifierGroupIds/0`,
    ]);
  });

  it('escapes dictionary keys in error paths (RFC 6901 ~0 and ~1)', async () => {
    const storeId = await newStore();
    const { document } = smallDocument(storeId);
    const stray = randomUUID();
    Object.assign(document.items, {
      'fries/large~1': { itemId: stray, name: 'Fries', basePrice: 3, modifierGroupIds: [] },
    });
    const result = await ingest(storeId, host.serveJson(`/escaped-${storeId}.json`, document));
    expectFailed(result, /every dictionary key must equal the entity's own itemId/, [
      '/items/fries~1large~01/itemId',
    ]);
  });

  it('fails a USD basePrice with three fraction digits as PRECISION_EXCEEDED', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 20 });
    const [itemId] = topLevelItemIds(document);
    document.items[itemId!]!.basePrice = 1.999;
    const result = await ingest(storeId, host.serveJson(`/precise-${storeId}.json`, document));
    expectFailed(result, /^PRECISION_EXCEEDED: basePrice 1\.999 /, [`/items/${itemId}/basePrice`]);
  });

  it('fails a document whose currency is not the store’s at /currency', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 20, currency: 'EUR' });
    const result = await ingest(storeId, host.serveJson(`/euro-${storeId}.json`, document));
    expectFailed(result, /^currency EUR does not match the store's currency USD\.$/, ['/currency']);
  });

  it('fails a document for another store at /storeId', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId: randomUUID(), items: 20 });
    const result = await ingest(storeId, host.serveJson(`/foreign-${storeId}.json`, document));
    expectFailed(result, new RegExp(`does not match the notified store ${storeId}`), ['/storeId']);
  });
});

describe('catalog ingest: status resource', () => {
  it('walks queued → pulling → processing → succeeded, updatedAt moving forward', async () => {
    const storeId = await newStore();
    const document = generateCatalogSet({ storeId, items: 30 });
    let release: (() => void) | undefined;
    const url = host.route(`/held-${storeId}.json`, (_request, response) => {
      release = () =>
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(document));
    });

    const accepted = await notify(storeId, url);
    expect(accepted.status).toBe(202);
    const statusUrl: string = accepted.body.statusUrl;
    expect(statusUrl).toBe(statusPath(storeId, accepted.body.catalogIngestId));
    const first = await readStatus(statusUrl);
    expect(first.status).toBe(200);
    expect(first.body.status).toMatch(/^(queued|pulling|processing|succeeded)$/);
    expect(first.body.errors).toEqual([]);

    // The download has started and is held open by the host.
    const pulling = await waitForStatus(statusUrl, /^pulling$/);
    await expect.poll(() => release !== undefined).toBe(true);
    expect(Number(pulling.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(pulling.body.errors).toEqual([]);
    expect(pulling.body).not.toHaveProperty('summary');
    expect(Date.parse(pulling.body.updatedAt)).toBeGreaterThanOrEqual(
      Date.parse(pulling.body.createdAt),
    );

    release!();
    const succeeded = await waitForTerminal(statusUrl);
    expect(succeeded.body).toMatchObject({
      catalogIngestId: accepted.body.catalogIngestId,
      storeId,
      status: 'succeeded',
      errors: [],
      createdAt: pulling.body.createdAt,
      summary: { items: 30, added: 30, removed: 0, priceChanged: 0 },
    });
    expect(succeeded.headers.get('retry-after')).toBeNull();
    expect(Date.parse(succeeded.body.updatedAt)).toBeGreaterThan(
      Date.parse(pulling.body.updatedAt),
    );
  });

  it('re-ingest with changes reports added, removed and priceChanged and serves the new document', async () => {
    const storeId = await newStore();
    const items = 40;
    const before = generateCatalogSet({ storeId, items });
    const firstRun = await ingest(storeId, host.serveJson(`/v1-${storeId}.json`, before));
    expect(firstRun.done).toMatchObject({
      status: 'succeeded',
      summary: { items, added: items, removed: 0, priceChanged: 0 },
    });
    const path = `/v1/marketfront/stores/${storeId}/catalogset`;
    const servedBefore = await call(platform.baseUrl, 'GET', path, { apiKey: distribution.apiKey });
    expect(servedBefore.status).toBe(200);
    expect(servedBefore.body).toEqual(before);

    const after = clone(before);
    const topLevel = topLevelItemIds(after);
    expect(topLevel.length).toBeGreaterThanOrEqual(6);
    const removed = topLevel.slice(0, 2);
    const repriced = topLevel.slice(2, 6);
    for (const itemId of removed) {
      delete after.items[itemId];
      for (const section of Object.values(after.sections)) {
        section.itemIds = section.itemIds.filter((id) => id !== itemId);
      }
    }
    for (const itemId of repriced) {
      const item = after.items[itemId]!;
      item.basePrice = Math.round((item.basePrice + 1.25) * 100) / 100;
    }
    const firstSection = Object.values(after.sections)[0]!;
    for (let i = 0; i < 3; i++) {
      const itemId = randomUUID();
      after.items[itemId] = {
        itemId,
        name: `New dish ${i + 1}`,
        basePrice: 4.5 + i,
        isAvailable: true,
        modifierGroupIds: [],
      };
      firstSection.itemIds.push(itemId);
    }

    const secondRun = await ingest(storeId, host.serveJson(`/v2-${storeId}.json`, after));
    expect(secondRun.done).toMatchObject({ status: 'succeeded', errors: [] });
    expect(secondRun.done.summary).toEqual({
      items: items + 1,
      sections: Object.keys(after.sections).length,
      modifierGroups: Object.keys(after.modifierGroups).length,
      added: 3,
      removed: 2,
      priceChanged: 4,
    });
    const servedAfter = await call(platform.baseUrl, 'GET', path, { apiKey: distribution.apiKey });
    expect(servedAfter.status).toBe(200);
    expect(servedAfter.body).toEqual(after);
    expect(servedAfter.headers.get('etag')).toMatch(/^".+"$/);
    expect(servedAfter.headers.get('etag')).not.toBe(servedBefore.headers.get('etag'));
  });
});

describe('catalog endpoints: not found', () => {
  it('answers an unknown catalogIngestId with 404 CATALOG_INGEST_NOT_FOUND', async () => {
    const storeId = await newStore();
    const response = await readStatus(statusPath(storeId, randomUUID()));
    expectProblem(response, 404, 'CATALOG_INGEST_NOT_FOUND');
  });

  it('hides a run from another store of the same partner and from another partner', async () => {
    const storeId = await newStore();
    const otherStoreId = await newStore();
    const { runId } = await ingest(
      storeId,
      host.serveJson(`/owned-${storeId}.json`, generateCatalogSet({ storeId, items: 12 })),
    );
    // The owner sees it.
    expect((await readStatus(statusPath(storeId, runId))).status).toBe(200);

    const wrongStore = await readStatus(statusPath(otherStoreId, runId));
    expectProblem(wrongStore, 404, 'CATALOG_INGEST_NOT_FOUND');
    const otherPartner = await readStatus(statusPath(storeId, runId), otherCommerce.apiKey);
    expect(otherPartner.status).toBe(404);
    expect(otherPartner.headers.get('content-type')).toContain('application/problem+json');
    expect(otherPartner.body.errorCode).toMatch(/^(CATALOG_INGEST_NOT_FOUND|STORE_NOT_FOUND)$/);
    expect(otherPartner.text).not.toContain(host.base);
    expect(otherPartner.text).not.toContain('succeeded');
  });

  it('refuses a notification for another partner’s store or an unknown store with 404 STORE_NOT_FOUND', async () => {
    const foreignStoreId = await newStore(otherCommerce);
    const unknownStoreId = randomUUID();
    const url = host.serveJson(`/never-${foreignStoreId}.json`, {});
    for (const storeId of [foreignStoreId, unknownStoreId]) {
      const response = await notify(storeId, url);
      expectProblem(response, 404, 'STORE_NOT_FOUND');
      expect(response.headers.get('location')).toBeNull();
      // No run was recorded for the refused notification.
      const runs = await platform.catalogDb
        .selectFrom('ingest_runs')
        .select('run_id')
        .where('store_id', '=', storeId)
        .execute();
      expect(runs).toEqual([]);
    }
  });

  it('answers the catalogset of an unknown store and of a store without an ingest with 404 CATALOGSET_NOT_FOUND', async () => {
    const unknown = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${randomUUID()}/catalogset`,
      { apiKey: distribution.apiKey },
    );
    expectProblem(unknown, 404, 'CATALOGSET_NOT_FOUND');

    const storeId = await newStore();
    const fresh = await call(
      platform.baseUrl,
      'GET',
      `/v1/marketfront/stores/${storeId}/catalogset`,
      { apiKey: distribution.apiKey },
    );
    expectProblem(fresh, 404, 'CATALOGSET_NOT_FOUND');
  });

  it('keeps serving the previous catalog (same ETag) after a failed ingest', async () => {
    const storeId = await newStore();
    const good = generateCatalogSet({ storeId, items: 25 });
    const first = await ingest(storeId, host.serveJson(`/good-${storeId}.json`, good));
    expect(first.done.status).toBe('succeeded');
    const path = `/v1/marketfront/stores/${storeId}/catalogset`;
    const before = await call(platform.baseUrl, 'GET', path, { apiKey: distribution.apiKey });
    expect(before.status).toBe(200);
    const etag = before.headers.get('etag');
    expect(etag).toMatch(/^".+"$/);

    const bad = withBrokenReference(generateCatalogSet({ storeId, items: 25, seed: 2 }));
    const broken = Object.values(bad.items).find((item) => item.modifierGroupIds[0] === MISSING_ID);
    const second = await ingest(storeId, host.serveJson(`/bad-${storeId}.json`, bad));
    expectFailed(second, /contact support quoting catalogIngestId/, [
      `/items/${broken!.itemId}/modifierGroupIds/0`,
    ]);

    const after = await call(platform.baseUrl, 'GET', path, { apiKey: distribution.apiKey });
    expect(after.status).toBe(200);
    expect(after.body).toEqual(good);
    expect(after.headers.get('etag')).toBe(etag);
    const revalidated = await call(platform.baseUrl, 'GET', path, {
      apiKey: distribution.apiKey,
      headers: { 'if-none-match': etag! },
    });
    expect(revalidated.status).toBe(304);
  });
});

describe('catalog endpoints: bad input', () => {
  const notifyPath = '/v1/commerce/catalogset-notification';
  const post = (path: string, options: Parameters<typeof call>[3] = {}) =>
    call(platform.baseUrl, 'POST', path, { apiKey: commerce.apiKey, ...options });

  it('requires the storeId query parameter as a GUID', async () => {
    const body = { callbackUrl: `${host.base}/x.json` };
    const missing = await post(notifyPath, { body });
    expectProblem(missing, 400, 'REQUEST_INVALID');
    expect(missing.body.errors).toEqual([
      expect.objectContaining({ pointer: null, message: expect.stringContaining('storeId') }),
    ]);

    const malformed = await post(`${notifyPath}?storeId=not-a-guid`, { body });
    expectProblem(malformed, 400, 'REQUEST_INVALID');
    expect(malformed.body.errors).toEqual([
      expect.objectContaining({ pointer: null, message: expect.stringContaining('storeId') }),
    ]);
  });

  it('validates the notification body with pointers', async () => {
    const storeId = await newStore();
    const path = `${notifyPath}?storeId=${storeId}`;
    for (const body of [
      {},
      { callbackUrl: '' },
      { callbackUrl: `https://a.example/${'x'.repeat(3_000)}` },
      { callbackUrl: 42 },
    ]) {
      const response = await post(path, { body });
      expectProblem(response, 400, 'REQUEST_INVALID');
      expect(response.body.errors).toEqual([
        expect.objectContaining({ pointer: '/callbackUrl', code: expect.any(String) }),
      ]);
    }

    const notJson = await post(path, { rawBody: '{"callbackUrl": "https://a.example/x"' });
    expectProblem(notJson, 400, 'REQUEST_INVALID');

    const tooLarge = await post(path, {
      body: { callbackUrl: 'https://a.example/x', padding: 'x'.repeat(1024 * 1024 + 1) },
    });
    expectProblem(tooLarge, 413, 'PAYLOAD_TOO_LARGE');

    // None of these created a run.
    const runs = await platform.catalogDb
      .selectFrom('ingest_runs')
      .select('run_id')
      .where('store_id', '=', storeId)
      .execute();
    expect(runs).toEqual([]);
  });

  it('answers a distribution key with 403 and no key with 401', async () => {
    const storeId = await newStore();
    const path = `${notifyPath}?storeId=${storeId}`;
    const body = { callbackUrl: `${host.base}/x.json` };
    expectProblem(await post(path, { body, apiKey: distribution.apiKey }), 403, 'FORBIDDEN');
    const anonymous = await call(platform.baseUrl, 'POST', path, { body });
    expectProblem(anonymous, 401, 'UNAUTHORIZED');
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const anonymousStatus = await call(platform.baseUrl, 'GET', statusPath(storeId, randomUUID()));
    expectProblem(anonymousStatus, 401, 'UNAUTHORIZED');
  });

  it('answers a malformed catalogIngestId or storeId in the status path with 400', async () => {
    const storeId = await newStore();
    const badRun = await readStatus(`/v1/commerce/stores/${storeId}/catalog-ingest/12345/status`);
    expectProblem(badRun, 400, 'REQUEST_INVALID');
    expect(badRun.body.errors).toEqual([
      expect.objectContaining({ message: expect.stringContaining('catalogIngestId') }),
    ]);
    const badStore = await readStatus(
      `/v1/commerce/stores/nope/catalog-ingest/${randomUUID()}/status`,
    );
    expectProblem(badStore, 400, 'REQUEST_INVALID');
  });
});

describe('the ingest run metric', () => {
  const ingestRuns = () =>
    countsBy(
      platform.metrics.get('catalog')!.registry,
      'pcp_catalog_ingest_run_duration_seconds',
      'outcome',
    );

  /** The seconds observed, by outcome (the histogram's `_sum`). */
  const ingestRunSeconds = async () => {
    const histogram = await platform.metrics
      .get('catalog')!
      .registry.getSingleMetric('pcp_catalog_ingest_run_duration_seconds')!
      .get();
    return Object.fromEntries(
      histogram.values
        .filter((value) => (value as { metricName?: string }).metricName?.endsWith('_sum'))
        .map((value) => [String(value.labels.outcome), value.value]),
    );
  };

  it('counts each finished run by outcome, with its time from the notification', async () => {
    const storeId = await newStore();
    const before = await ingestRuns();
    const beforeSeconds = await ingestRunSeconds();
    const started = Date.now();
    await ingest(storeId, `http://127.0.0.1:${await closedPort()}/catalog.json`);
    await ingest(storeId, host.serveJson(`/metric-array-${storeId}.json`, '[]'));
    const { document } = smallDocument(storeId);
    await ingest(storeId, host.serveJson(`/metric-small-${storeId}.json`, document));
    expect(growth(before, await ingestRuns())).toEqual({
      download_failed: 1,
      invalid: 1,
      succeeded: 1,
    });
    // The seconds observed for the success lie within the time the three runs took.
    const seconds = growth(beforeSeconds, await ingestRunSeconds()).succeeded;
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan((Date.now() - started) / 1000);
  });
});
