/**
 * Catalog dry run end to end: the CatalogSet JSON Schema the gateway serves, and the dry
 * run of an ingest (POST /v1/commerce/stores/{storeId}/catalogset-validation), which must
 * download, validate and summarize exactly as ingest does while storing and activating
 * nothing.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateCatalogSet,
  withBrokenReference,
  type GeneratedCatalogSet,
} from '@pcp/testing/catalog-generator';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { createStore } from './ingest.js';

const PUBLIC_BASE_URL = 'https://api.pcp.example';
/** withBrokenReference's dangling id (@pcp/testing/catalog-generator). */
const MISSING_ID = 'deadbeef-0000-4000-9000-000000000000';

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
type Partner = { partnerId: string; apiKey: string };
let commerce: Partner;
let otherCommerce: Partner;
let distribution: Partner;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    // Rate limiting must not decide an outcome here; the dry-run bounds are the subject.
    gatewayEnv: {
      PUBLIC_BASE_URL,
      RATE_LIMIT_WRITES_PER_MIN: '100000',
      RATE_LIMIT_READS_PER_MIN: '100000',
    },
    catalogEnv: {
      CATALOG_VALIDATION_MAX_IN_PROGRESS: '2',
      CATALOG_VALIDATION_MAX_PER_PARTNER: '1',
    },
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

const dryRunPath = (storeId: string) => `/v1/commerce/stores/${storeId}/catalogset-validation`;

function dryRun(storeId: string, callbackUrl: string, apiKey = commerce.apiKey) {
  return call(platform.baseUrl, 'POST', dryRunPath(storeId), {
    apiKey,
    body: { callbackUrl },
  });
}

/** Notify an ingest and wait for its terminal status body. */
async function ingest(storeId: string, callbackUrl: string) {
  const accepted = await call(
    platform.baseUrl,
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    { apiKey: commerce.apiKey, body: { callbackUrl } },
  );
  expect(accepted.status).toBe(202);
  let last: HttpResult | undefined;
  await expect
    .poll(
      async () => {
        last = await call(platform.baseUrl, 'GET', accepted.body.statusUrl, {
          apiKey: commerce.apiKey,
        });
        return last.body.status;
      },
      { timeout: 15_000, interval: 50 },
    )
    .toMatch(/^(succeeded|failed)$/);
  return last!.body as {
    catalogIngestId: string;
    status: string;
    errors: { message: string; path: string }[];
    summary?: Record<string, number>;
  };
}

function expectProblem(response: HttpResult, status: number, errorCode: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({ status, errorCode, detail: expect.any(String) });
}

/** What the dry run stores: nothing. The store's runs, versions and active version. */
async function storedState(storeId: string) {
  const db = platform.catalogDb;
  const [runs, versions, active] = await Promise.all([
    db.selectFrom('ingest_runs').select('run_id').where('store_id', '=', storeId).execute(),
    db
      .selectFrom('catalog_versions')
      .select('version_id')
      .where('store_id', '=', storeId)
      .execute(),
    db.selectFrom('active_catalogs').selectAll().where('store_id', '=', storeId).execute(),
  ]);
  return { runs, versions, active };
}

function readCatalogSet(storeId: string) {
  return call(platform.baseUrl, 'GET', `/v1/marketfront/stores/${storeId}/catalogset`, {
    apiKey: distribution.apiKey,
  });
}

/** `after`: `before` with two items removed, four repriced and three added. */
function changed(before: GeneratedCatalogSet): GeneratedCatalogSet {
  const after = structuredClone(before);
  const topLevel = Object.values(after.sections).flatMap((section) => section.itemIds);
  for (const itemId of topLevel.slice(0, 2)) {
    delete after.items[itemId];
    for (const section of Object.values(after.sections)) {
      section.itemIds = section.itemIds.filter((id) => id !== itemId);
    }
  }
  for (const itemId of topLevel.slice(2, 6)) {
    const item = after.items[itemId]!;
    item.basePrice = Math.round((item.basePrice + 1.25) * 100) / 100;
  }
  const firstSection = Object.values(after.sections)[0]!;
  for (let i = 0; i < 3; i++) {
    const itemId = randomUUID();
    after.items[itemId] = {
      itemId,
      name: `New dish ${i}`,
      basePrice: 4.5 + i,
      isAvailable: true,
      modifierGroupIds: [],
    };
    firstSection.itemIds.push(itemId);
  }
  return after;
}

describe('GET /schemas/catalogset.json', () => {
  const schemaPath = '/schemas/catalogset.json';

  it('serves the generated JSON Schema publicly, cacheable, with an ETag', async () => {
    const response = await call(platform.baseUrl, 'GET', schemaPath);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/schema\+json/);
    expect(response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const etag = response.headers.get('etag');
    expect(etag).toMatch(/^".+"$/);
    expect(response.body).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `${PUBLIC_BASE_URL}${schemaPath}`,
      title: 'CatalogSet',
      type: 'object',
      required: [
        'catalogSetId',
        'storeId',
        'currency',
        'catalogs',
        'sections',
        'items',
        'modifierGroups',
      ],
    });
    // It names the rules it cannot express and where they are checked.
    for (const rule of [
      'key equals',
      'resolves',
      'cycle',
      'levels',
      'minor-unit',
      'pcp-catalog dry-run',
      'catalogset-validation',
    ]) {
      expect(response.body.description).toContain(rule);
    }

    const revalidated = await call(platform.baseUrl, 'GET', schemaPath, {
      headers: { 'if-none-match': etag! },
    });
    expect(revalidated.status).toBe(304);
    expect(revalidated.text).toBe('');
    expect(revalidated.headers.get('etag')).toBe(etag);
  });

  it('accepts a valid CatalogSet and refuses a malformed one (checked with Ajv, draft 2020-12)', async () => {
    const { body: schema } = await call(platform.baseUrl, 'GET', schemaPath);
    const ajv = new Ajv2020({ allErrors: true });
    // ajv-formats is CommonJS: its plugin is the module's default export.
    addFormats.default(ajv);
    const validate = ajv.compile(schema);
    const good = generateCatalogSet({ storeId: randomUUID(), items: 60 });
    expect(validate(good), JSON.stringify(validate.errors)).toBe(true);

    const [itemId] = Object.keys(good.items);
    const bad = structuredClone(good) as unknown as Record<
      string,
      Record<string, Record<string, unknown>>
    >;
    bad.items![itemId!]!.basePrice = '9.50';
    (bad as Record<string, unknown>).currency = 'usd';
    expect(validate(bad)).toBe(false);
    expect(validate.errors?.map((error) => error.instancePath).sort()).toEqual([
      '/currency',
      `/items/${itemId}/basePrice`,
    ]);
  });

  it('is hidden from the OpenAPI document’s operations', async () => {
    const openapi = await call(platform.baseUrl, 'GET', '/openapi.json');
    expect(openapi.status).toBe(200);
    expect(Object.keys(openapi.body.paths)).not.toContain(schemaPath);
    expect(Object.keys(openapi.body.paths)).toContain(
      '/v1/commerce/stores/{storeId}/catalogset-validation',
    );
  });
});

describe('catalogset-validation: the dry run', () => {
  it('summarizes a valid document against the active catalog, activating nothing', async () => {
    const storeId = await newStore();
    const before = generateCatalogSet({ storeId, items: 40 });

    // Before any ingest every item is new.
    const first = await dryRun(storeId, host.serveJson(`/first-${storeId}.json`, before));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      valid: true,
      errors: [],
      summary: {
        items: 40,
        sections: Object.keys(before.sections).length,
        modifierGroups: Object.keys(before.modifierGroups).length,
        added: 40,
        removed: 0,
        priceChanged: 0,
      },
    });
    expect(await storedState(storeId)).toEqual({ runs: [], versions: [], active: [] });
    expectProblem(await readCatalogSet(storeId), 404, 'CATALOGSET_NOT_FOUND');

    expect((await ingest(storeId, host.serveJson(`/v1-${storeId}.json`, before))).status).toBe(
      'succeeded',
    );
    const servedBefore = await readCatalogSet(storeId);
    const stateBefore = await storedState(storeId);

    const after = changed(before);
    const afterUrl = host.serveJson(`/v2-${storeId}.json`, after);
    const checked = await dryRun(storeId, afterUrl);
    expect(checked.status).toBe(200);
    const expectedSummary = {
      items: 41,
      sections: Object.keys(after.sections).length,
      modifierGroups: Object.keys(after.modifierGroups).length,
      added: 3,
      removed: 2,
      priceChanged: 4,
    };
    expect(checked.body).toEqual({ valid: true, errors: [], summary: expectedSummary });

    // Nothing changed: no run, no version, the same active version served with the same ETag.
    expect(await storedState(storeId)).toEqual(stateBefore);
    const servedAfter = await readCatalogSet(storeId);
    expect(servedAfter.headers.get('etag')).toBe(servedBefore.headers.get('etag'));
    expect(servedAfter.body).toEqual(before);

    // The ingest of the same document reports the summary the dry run predicted.
    expect((await ingest(storeId, afterUrl)).summary).toEqual(expectedSummary);
  });

  it('reports the errors ingest reports for an invalid document, at the same pointers', async () => {
    const storeId = await newStore();
    const document = withBrokenReference(generateCatalogSet({ storeId, items: 60 }));
    const [itemId] = Object.keys(document.items);
    document.items[itemId!]!.basePrice = 2.005;
    const url = host.serveJson(`/broken-${storeId}.json`, document);

    const checked = await dryRun(storeId, url);
    expect(checked.status).toBe(200);
    expect(checked.body.valid).toBe(false);
    expect(checked.body.summary).toBeNull();
    const failed = await ingest(storeId, url);
    expect(failed.status).toBe('failed');
    expect(failed.errors.length).toBe(2);
    // Identical but for the run id ingest asks partners to quote (a dry run has none).
    const quoting = `, or contact support quoting catalogIngestId ${failed.catalogIngestId}.`;
    expect(checked.body.errors).toEqual(
      failed.errors.map((error) => ({ ...error, message: error.message.replace(quoting, '.') })),
    );
    expect(checked.body.errors).toEqual([
      {
        path: expect.stringMatching(/^\/items\/[^/]+\/modifierGroupIds\/0$/),
        message: expect.stringMatching(
          new RegExp(`${MISSING_ID}, which is not in modifierGroups\\. Fix the reference\\.$`),
        ),
      },
      {
        path: `/items/${itemId}/basePrice`,
        message: expect.stringMatching(/^PRECISION_EXCEEDED: /),
      },
    ]);
  });

  it('checks the document against the store: its storeId and currency', async () => {
    const storeId = await newStore();
    const document = {
      ...generateCatalogSet({ storeId: randomUUID(), items: 20 }),
      currency: 'EUR',
    };
    const checked = await dryRun(storeId, host.serveJson(`/other-${storeId}.json`, document));
    expect(checked.body).toMatchObject({ valid: false, summary: null });
    expect(checked.body.errors.map((error: { path: string }) => error.path)).toEqual([
      '/storeId',
      '/currency',
    ]);
  });

  it('answers invalid JSON with valid false and ingest’s message', async () => {
    const storeId = await newStore();
    const url = host.serveJson(`/truncated-${storeId}.json`, '{"catalogSetId": ');
    const checked = await dryRun(storeId, url);
    const failed = await ingest(storeId, url);
    expect(failed.errors).toEqual([
      { path: '', message: expect.stringMatching(/^callbackUrl did not return valid JSON/) },
    ]);
    expect(checked.body).toEqual({ valid: false, errors: failed.errors, summary: null });
  });

  it('refuses the downloads ingest refuses (not allowed address, scheme, HTTP error) with its messages', async () => {
    const storeId = await newStore();
    const port = new URL(host.base).port;
    for (const url of [
      // Loopback, but not on the test deployment's allow-list (127.0.0.1/32).
      `http://127.0.0.2:${port}/catalog.json`,
      'ftp://127.0.0.1/catalog.json',
      'file:///etc/passwd',
      `${host.base}/nothing-here.json`,
    ]) {
      const checked = await dryRun(storeId, url);
      expect(checked.status, url).toBe(200);
      const failed = await ingest(storeId, url);
      expect(failed.status).toBe('failed');
      expect(checked.body, url).toEqual({ valid: false, errors: failed.errors, summary: null });
      expect(checked.body.errors[0].message).not.toMatch(/passwd|ECONN|stack/i);
    }
  });

  it('answers 404 STORE_NOT_FOUND for another partner’s store or an unknown one', async () => {
    const otherStore = await newStore(otherCommerce);
    const url = host.serveJson(
      `/anything-${otherStore}.json`,
      generateCatalogSet({ storeId: otherStore, items: 12 }),
    );
    expectProblem(await dryRun(otherStore, url), 404, 'STORE_NOT_FOUND');
    expectProblem(await dryRun(randomUUID(), url), 404, 'STORE_NOT_FOUND');
  });

  it('answers a distribution key with 403 and no key with 401', async () => {
    const storeId = await newStore();
    const url = `${host.base}/x.json`;
    expectProblem(await dryRun(storeId, url, distribution.apiKey), 403, 'FORBIDDEN');
    const anonymous = await call(platform.baseUrl, 'POST', dryRunPath(storeId), {
      body: { callbackUrl: url },
    });
    expectProblem(anonymous, 401, 'UNAUTHORIZED');
  });

  it('answers malformed, oversized and hostile bodies with a ProblemDetail', async () => {
    const storeId = await newStore();
    const post = (options: Parameters<typeof call>[3]) =>
      call(platform.baseUrl, 'POST', dryRunPath(storeId), {
        apiKey: commerce.apiKey,
        ...options,
      });

    for (const body of [
      {},
      { callbackUrl: '' },
      { callbackUrl: 42 },
      { callbackUrl: ['https://a.example/x'] },
      { callbackUrl: null },
      { callbackUrl: `https://a.example/${'x'.repeat(100_000)}` },
    ]) {
      const response = await post({ body });
      expectProblem(response, 400, 'REQUEST_INVALID');
      expect(response.body.errors).toEqual([expect.objectContaining({ pointer: '/callbackUrl' })]);
    }
    for (const rawBody of [
      '{"callbackUrl": "https://a.example/x"',
      '',
      '[]',
      '"https://a.example/x"',
      '{"__proto__": {"admin": true}, "callbackUrl": "https://a.example/x"}',
      '{"constructor": {"prototype": {"admin": true}}, "callbackUrl": "https://a.example/x"}',
    ]) {
      expectProblem(await post({ rawBody }), 400, 'REQUEST_INVALID');
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();

    expectProblem(
      await post({
        body: { callbackUrl: 'https://a.example/x', padding: 'x'.repeat(1024 * 1024 + 1) },
      }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    expectProblem(
      await post({
        rawBody: 'callbackUrl=https://a.example/x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    const badStore = await call(platform.baseUrl, 'POST', dryRunPath('not-a-guid'), {
      apiKey: commerce.apiKey,
      body: { callbackUrl: `${host.base}/x.json` },
    });
    expectProblem(badStore, 400, 'REQUEST_INVALID');
    // None of these reached a download or created anything.
    expect(await storedState(storeId)).toEqual({ runs: [], versions: [], active: [] });
  });

  it('bounds dry runs in progress: 429 beyond a partner’s, 503 beyond the replica’s, both with Retry-After', async () => {
    const third = await platform.newPartner('commerce');
    const stores = [await newStore(), await newStore(otherCommerce), await newStore(third)];
    // A host that holds each download open until released.
    const waiting: ServerResponse[] = [];
    let arrived: () => void = () => undefined;
    const url = host.route(`/slow-${stores[0]}.json`, (_request: IncomingMessage, response) => {
      waiting.push(response);
      arrived();
    });
    const downloadStarted = () => new Promise<void>((resolve) => (arrived = resolve));

    let started = downloadStarted();
    const firstRun = dryRun(stores[0]!, url);
    await started;
    const sameParter = await dryRun(stores[0]!, url);
    expectProblem(sameParter, 429, 'RATE_LIMITED');
    expect(Number(sameParter.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    started = downloadStarted();
    const secondRun = dryRun(stores[1]!, url, otherCommerce.apiKey);
    await started;
    const replicaFull = await dryRun(stores[2]!, url, third.apiKey);
    expectProblem(replicaFull, 503, 'SERVICE_UNAVAILABLE');
    expect(Number(replicaFull.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const invalidJson = '{';
    for (const response of waiting) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(invalidJson);
    }
    expect((await firstRun).body).toMatchObject({ valid: false });
    expect((await secondRun).body).toMatchObject({ valid: false });

    // The slots are free again.
    const document = generateCatalogSet({ storeId: stores[2]!, items: 12 });
    const freed = await dryRun(
      stores[2]!,
      host.serveJson(`/freed-${stores[2]}.json`, document),
      third.apiKey,
    );
    expect(freed.body).toMatchObject({ valid: true });
  });
});
