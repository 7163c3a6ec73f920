import { catalogLimits } from '@pcp/contracts';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startCatalogHost } from '../catalog-host.js';
import { call } from '../http.js';
import { checkResponse, send } from './check-response.js';
import {
  hostileCatalogs,
  nested,
  referenceStorm,
  type HostileCatalog,
} from './hostile-catalogs.js';
import { startProcessPlatform, type ProcessPlatform } from './process-platform.js';
import { FUZZ_RUNS, fuzzParameters } from './settings.js';

/**
 * Hostile CatalogSets served by a partner's host, through ingest (notify → status) and the
 * dry run (catalogset-validation): every run ends terminal with partner-safe errors, the dry
 * run agrees, and the catalog process neither restarts nor outgrows its bound.
 */

/** The catalog's whole-download timeout here: the slow cases end by it. */
const FETCH_TIMEOUT_MS = 3_000;
/** Peak resident memory a service process may reach (the 20 MB name and 50 MB cap included). */
const MAX_SERVICE_RSS_MB = Number(process.env.FUZZ_MAX_RSS_MB ?? 900);

let env: TestEnvironment;
let running: ProcessPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let apiKey: string;

beforeAll(async () => {
  env = await createTestEnvironment();
  running = await startProcessPlatform(env, {
    gatewayEnv: { CATALOG_VALIDATION_TIMEOUT_MS: String(FETCH_TIMEOUT_MS + 10_000) },
    serviceEnv: { catalog: { CATALOG_FETCH_TIMEOUT_MS: String(FETCH_TIMEOUT_MS) } },
  });
  host = await startCatalogHost();
  ({ apiKey } = await running.platform.newPartner('commerce'));
}, 300_000);

afterAll(async () => {
  await host?.close();
  await running?.stop();
  await env?.cleanup();
});

async function newStore(): Promise<string> {
  const storeId = randomUUID();
  const created = await call(running.platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey,
    body: storeProfile(),
  });
  expect(created.status).toBe(201);
  return storeId;
}

interface Outcome {
  status: string;
  errors: { message: string; path: string }[];
}

/** No stack line, exception name, source path or the host's address in partner-facing text. */
function expectPartnerSafe(text: string) {
  expect(text).not.toContain('127.0.0.1');
  expect(text).not.toMatch(/\b\w*Error:/);
  expect(text).not.toMatch(/(^|\n)\s*at\s/);
  expect(text).not.toMatch(/\.(ts|js|mjs):\d+/);
  expect(text.length).toBeLessThan(2_000);
}

function expectWellFormedErrors(errors: Outcome['errors']) {
  expect(errors.length).toBeGreaterThan(0);
  expect(errors.length).toBeLessThanOrEqual(catalogLimits.maxErrors);
  for (const error of errors) {
    expect(Object.keys(error).sort()).toEqual(['message', 'path']);
    expect(error.path === '' || error.path.startsWith('/')).toBe(true);
    expectPartnerSafe(error.message);
  }
}

/** Notify, then poll the status until it is terminal; the status is checked on every read. */
async function ingest(storeId: string, callbackUrl: string): Promise<Outcome> {
  const { baseUrl } = running.platform;
  const accepted = await call(
    baseUrl,
    'POST',
    `/v1/commerce/catalogset-notification?storeId=${storeId}`,
    {
      apiKey,
      body: { callbackUrl },
    },
  );
  expect(accepted.status, accepted.text).toBe(202);
  const deadline = Date.now() + FETCH_TIMEOUT_MS + 60_000;
  for (;;) {
    const status = await call(baseUrl, 'GET', accepted.body.statusUrl, { apiKey });
    expect(status.status, status.text).toBe(200);
    if (status.body.status === 'succeeded' || status.body.status === 'failed') return status.body;
    if (Date.now() > deadline) throw new Error(`ingest still ${status.body.status}: it hangs`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The dry run: a 200 report (or a ProblemDetail, checked like any fuzzed answer). */
async function dryRun(storeId: string, callbackUrl: string) {
  const request = {
    method: 'POST',
    url: `/v1/commerce/stores/${storeId}/catalogset-validation`,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ callbackUrl }),
    key: 'own' as const,
  };
  const response = await send(running.platform.baseUrl, request);
  checkResponse(request, response);
  expect(response.status, response.text).toBe(200);
  return JSON.parse(response.text) as { valid: boolean; errors: Outcome['errors'] };
}

async function expectTerminal(hostile: HostileCatalog) {
  const storeId = await newStore();
  const url = host.route(`/${randomUUID()}.json`, hostile.serve());
  const outcome = await ingest(storeId, url);
  const report = await dryRun(storeId, url);
  if (outcome.status === 'failed') expectWellFormedErrors(outcome.errors);
  if (!report.valid) expectWellFormedErrors(report.errors);
  if (hostile.expect === 'invalid') {
    expect(outcome.status, JSON.stringify(outcome.errors)).toBe('failed');
    expect(report.valid, JSON.stringify(report.errors)).toBe(false);
  }
  return { outcome, report };
}

describe('hostile CatalogSets, each through ingest and the dry run', () => {
  it.each(hostileCatalogs(randomUUID()).map((hostile) => [hostile.name, hostile] as const))(
    '%s: ends terminal with safe errors',
    async (_name, hostile) => {
      await expectTerminal(hostile);
    },
    FETCH_TIMEOUT_MS * 2 + 120_000,
  );
});

describe('generated hostile CatalogSets', () => {
  it('ends every ingest terminal: nesting, storms and sizes at random', async () => {
    const storeId = await newStore();
    const cases = fc.oneof(
      fc.integer({ min: 100, max: 100_000 }).map((depth): HostileCatalog => ({
        name: `${depth} levels`,
        serve: () => (_request, response) =>
          response
            .writeHead(200, { 'content-type': 'application/json' })
            .end(nested(depth, depth % 2 === 0)),
        expect: 'invalid',
      })),
      fc
        .tuple(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 300 }))
        .map(([items, groups]): HostileCatalog => ({
          name: `storm ${items}×${groups}`,
          serve: () => (_request, response) =>
            response
              .writeHead(200, { 'content-type': 'application/json' })
              .end(JSON.stringify(referenceStorm(storeId, items, groups))),
          expect: 'invalid',
        })),
      fc
        .tuple(fc.constantFrom(...hostileCatalogs(storeId, 0.05)), fc.nat())
        .map(([hostile]) => hostile),
    );
    await fc.assert(
      fc.asyncProperty(cases, async (hostile) => {
        await expectTerminal(hostile);
      }),
      fuzzParameters(Math.max(1, Math.ceil(FUZZ_RUNS / 4))),
    );
  }, 600_000);
});

describe('after the hostile catalogs', () => {
  it('left every service process running (same PID), answering, within its memory bound', async () => {
    await running.expectHealthy('catalog', MAX_SERVICE_RSS_MB);
  });
});
