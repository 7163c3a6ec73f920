import type { ApiDeprecations, RequestLogEntry } from '@pcp/contracts';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdminError,
  apiVersionUsage,
  createKey,
  createPartner,
  MAX_USAGE_PARTNERS,
  setApiVersion,
} from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { insertRequests } from '../../src/db/request-log.repository.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// Finding what still calls a deprecated version (docs/guide/versioning.md#deprecation): a
// gateway alone with `2026-11-01` marked deprecated (nothing is in the registry yet), a partner
// pinned to it, its answers' headers, its request log filtered by version, and the operator's
// `api-version-usage` over the log. Each test file has a database of its own.

const DOCS = 'https://docs.partner-commerce.test';
const OLDEST = '2026-11-01';
const NEWEST = '2026-12-01';
const deprecations: ApiDeprecations = {
  versions: { [OLDEST]: { since: '2026-12-01', sunset: '2027-06-01' } },
  operations: {},
};

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = createLoneGateway(
    env,
    db,
    { REQUEST_LOG_FLUSH_MS: '20', DOCS_URL: DOCS },
    undefined,
    undefined,
    { apiDeprecations: deprecations },
  );
  await gateway.start();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.destroy();
  await env?.cleanup();
});

async function get(path: string, apiKey: string | undefined, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url()}${path}`, {
    headers: { ...headers, ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
  });
  return {
    status: response.status,
    headers: response.headers,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
    body: (await response.json()) as any,
  };
}

/** The caller's log in `version` once it holds `count` entries (written within a flush). */
async function logIn(apiKey: string, version: string, count: number): Promise<RequestLogEntry[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await get(`/v1/commerce/requests?limit=100&apiVersion=${version}`, apiKey);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    const entries = page.body.requests as RequestLogEntry[];
    if (entries.length >= count || Date.now() > deadline) return entries;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const deprecated = {
  deprecation: `@${Date.parse('2026-12-01') / 1000}`,
  sunset: 'Tue, 01 Jun 2027 00:00:00 GMT',
  link: `<${DOCS}/guide/changelog#${OLDEST}>; rel="deprecation"`,
};
const headersOf = (headers: Headers) => ({
  deprecation: headers.get('deprecation'),
  sunset: headers.get('sunset'),
  link: headers.get('link'),
});

describe('a partner pinned to a deprecated version', () => {
  it('is told on every answer in it, errors included, and finds those requests in its log', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Pinned old' });
    await setApiVersion(db, partner.partnerId, OLDEST);

    const pinned = await get('/v1/commerce/keys', partner.apiKey);
    expect(pinned.status).toBe(200);
    expect(pinned.headers.get('pcp-version')).toBe(OLDEST);
    expect(headersOf(pinned.headers)).toEqual(deprecated);
    const refused = await get('/v1/commerce/requests?limit=0', partner.apiKey);
    expect(refused.status).toBe(400);
    expect(headersOf(refused.headers)).toEqual(deprecated);
    const unauthenticated = await get('/v1/commerce/keys', undefined, { 'pcp-version': OLDEST });
    expect(unauthenticated.status).toBe(401);
    expect(headersOf(unauthenticated.headers)).toEqual(deprecated);

    const newer = await get('/v1/commerce/keys', partner.apiKey, { 'pcp-version': NEWEST });
    expect(newer.status).toBe(200);
    expect(headersOf(newer.headers)).toEqual({ deprecation: null, sunset: null, link: null });

    // Four requests in the old version so far (the filtered reads themselves count too).
    const old = await logIn(partner.apiKey, OLDEST, 3);
    expect(old.length).toBeGreaterThanOrEqual(3);
    expect(old.every((entry) => entry.apiVersion === OLDEST)).toBe(true);
    expect(old.map((entry) => entry.status)).toEqual(expect.arrayContaining([200, 400]));
    const current = await logIn(partner.apiKey, NEWEST, 1);
    expect(current.map((entry) => [entry.path, entry.apiVersion])).toContainEqual([
      '/v1/commerce/keys',
      NEWEST,
    ]);
    expect(current.every((entry) => entry.apiVersion === NEWEST)).toBe(true);
  });

  it('refuses a filter that is no version, as any malformed parameter', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Hostile' });
    for (const query of [
      'apiVersion=2026-10-01',
      'apiVersion=2026-13-45',
      'apiVersion=',
      'apiVersion=latest',
      `apiVersion=${'2026-11-01'.repeat(500)}`,
      'apiVersion=2026-11-01&apiVersion=2026-12-01',
      'apiVersion[]=2026-11-01',
      "apiVersion=2026-11-01'%20or%201=1--",
    ]) {
      const answer = await get(`/v1/commerce/requests?${query}`, partner.apiKey);
      expect(answer.status, query).toBe(400);
      expect(answer.headers.get('content-type')).toContain('application/problem+json');
      expect(answer.body.errorCode).toBe('REQUEST_INVALID');
      // A query parameter's problem names it in its message (query problems have no pointer).
      expect(answer.body.errors).toEqual([
        expect.objectContaining({ message: expect.stringContaining('apiVersion') }),
      ]);
      expect(JSON.stringify(answer.body)).not.toContain('2026-11-012026-11-01');
    }
  });
});

/** `count` requests of a tenant in `version`, written to the log as the recorder does. */
async function logged(tenantId: string, version: string | null, count: number, at = new Date()) {
  await insertRequests(
    db,
    Array.from({ length: count }, () => ({
      tenant_id: tenantId,
      at,
      method: 'GET',
      path: '/v1/commerce/keys',
      status: 200,
      error_code: null,
      request_id: randomUUID(),
      client_request_id: null,
      idempotency_key: null,
      latency_ms: 1,
      key_id: 'k',
      api_version: version,
    })),
    50_000,
    1_000,
  );
}

async function expectAdminError(promise: Promise<unknown>, message: RegExp) {
  const error = await promise.then(
    () => new Error('expected an AdminError'),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AdminError);
  expect((error as Error).message).toMatch(message);
}

describe('api-version-usage', () => {
  it('lists partners by their requests in each version, live and test together, most first', async () => {
    const busy = await createPartner(db, { kind: 'distribution', name: 'Busy' });
    const quiet = await createPartner(db, { kind: 'commerce', name: 'Quiet' });
    await createKey(db, busy.partnerId, { mode: 'test' });
    const lastWeek = new Date(Date.now() - 7 * 86_400_000);
    await logged(busy.partnerId, OLDEST, 40, lastWeek);
    await logged(busy.testPartnerId, OLDEST, 2);
    await logged(busy.partnerId, NEWEST, 10);
    await logged(quiet.partnerId, NEWEST, 45);
    await logged(quiet.partnerId, null, 1, lastWeek);

    const all = await apiVersionUsage(db);
    expect(all.since).toBeNull();
    expect(all.version).toBeNull();
    const mine = all.partners.filter((partner) =>
      [busy.partnerId, quiet.partnerId].includes(partner.partnerId),
    );
    expect(mine.map((partner) => [partner.name, partner.requests])).toEqual([
      ['Busy', 52],
      ['Quiet', 46],
    ]);
    expect(mine[0]!.apiVersion).toBe(NEWEST);
    expect(mine[0]!.versions).toEqual([
      { version: OLDEST, requests: 42, lastAt: expect.any(String) },
      { version: NEWEST, requests: 10, lastAt: expect.any(String) },
    ]);
    expect(mine[1]!.versions.map((entry) => [entry.version, entry.requests])).toEqual([
      [null, 1],
      [NEWEST, 45],
    ]);

    const old = await apiVersionUsage(db, { version: OLDEST });
    expect(old.version).toBe(OLDEST);
    expect(old.partners.map((partner) => partner.partnerId)).toContain(busy.partnerId);
    expect(old.partners.map((partner) => partner.partnerId)).not.toContain(quiet.partnerId);
    expect(
      old.partners.every((partner) => partner.versions.every((v) => v.version === OLDEST)),
    ).toBe(true);

    const recent = await apiVersionUsage(db, {
      version: OLDEST,
      since: new Date(Date.now() - 86_400_000).toISOString(),
    });
    const busyRecent = recent.partners.find((partner) => partner.partnerId === busy.partnerId);
    expect(busyRecent?.versions).toEqual([
      { version: OLDEST, requests: 2, lastAt: expect.any(String) },
    ]);
    const future = await apiVersionUsage(db, { since: '2999-01-01' });
    expect(future).toEqual({
      since: '2999-01-01T00:00:00.000Z',
      version: null,
      partners: [],
      partnersOmitted: 0,
    });
  });

  it(`lists at most ${MAX_USAGE_PARTNERS} partners and says how many more there are`, async () => {
    const partners = [];
    for (let i = 0; i < MAX_USAGE_PARTNERS + 3; i++) {
      partners.push(await createPartner(db, { kind: 'commerce', name: `Many ${i}` }));
    }
    for (const partner of partners) await logged(partner.partnerId, OLDEST, 1);
    const usage = await apiVersionUsage(db, { version: OLDEST });
    expect(usage.partners).toHaveLength(MAX_USAGE_PARTNERS);
    const counted = usage.partners.length + usage.partnersOmitted;
    // Every partner that called it: these and the test's others.
    const callers = await db
      .selectFrom('request_log')
      .select('tenant_id')
      .distinct()
      .where('api_version', '=', OLDEST)
      .execute();
    expect(counted).toBeGreaterThanOrEqual(MAX_USAGE_PARTNERS + 3);
    expect(counted).toBeLessThanOrEqual(callers.length);
    const totals = usage.partners.map((partner) => partner.requests);
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
  });

  it('refuses a version or date that is not one, reading nothing', async () => {
    for (const version of ['2026-10-01', '2026-13-45', '', 'x'.repeat(100_000), "2026-11-01' --"]) {
      await expectAdminError(apiVersionUsage(db, { version }), /--version must be one of/);
    }
    for (const since of [
      'yesterday',
      '2026-02-30',
      '2026-12-01T10:00:00',
      '',
      '9'.repeat(100_000),
      '2026-12-01T00:00:00Z; drop table request_log',
    ]) {
      await expectAdminError(apiVersionUsage(db, { since }), /--since must be an ISO 8601/);
    }
  });
});
