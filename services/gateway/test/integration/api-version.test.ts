import {
  API_VERSION_CHANGES,
  authInvalidationSubject,
  LATEST_API_VERSION,
  type ApiVersionPin,
} from '@pcp/contracts';
import { connectNats } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { createKey, createPartner, revokeKey } from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// A partner's API version pin (docs/guide/requests.md#api-version), read and moved by the
// partner, on two gateways (each with its own NATS connection, as replicas are) that cache
// keys for a minute: only the announcement of a change can make the other one see it. The
// gateways answer these routes themselves (no service behind them).

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let first: GatewayService;
let second: GatewayService;
let secondNc: NatsConnection;

const OLDEST = '2026-11-01';
const NEWEST = '2026-12-01' as const;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  const overrides = { AUTH_CACHE_TTL_MS: '60000', RATE_LIMIT_WRITES_PER_MIN: '10000' };
  secondNc = await connectNats({
    url: inject('servers').natsUrl,
    name: 'second-gateway',
    logger: env.logger,
  });
  first = createLoneGateway(env, db, overrides);
  second = createLoneGateway({ ...env, nc: secondNc }, db, overrides);
  await first.start();
  await second.start();
});

afterAll(async () => {
  await first?.stop();
  await second?.stop();
  await secondNc?.drain();
  await db?.destroy();
  await env?.cleanup();
});

interface Answer {
  status: number;
  type: string | null;
  body: {
    errorCode?: string;
    detail?: string;
    errors?: { pointer: string | null }[];
    [field: string]: unknown;
  };
}

async function call(
  gateway: GatewayService,
  method: 'GET' | 'POST',
  path: string,
  apiKey: string,
  body?: string,
  contentType = 'application/json',
): Promise<Answer> {
  const response = await fetch(`${gateway.url()}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined ? {} : { 'content-type': contentType }),
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    body: JSON.parse(text) as Answer['body'],
  };
}

const commercePath = '/v1/commerce/api-version';
const marketfrontPath = '/v1/marketfront/api-version';

const upgrade = (apiKey: string, version: unknown, gateway = first, path = marketfrontPath) =>
  call(gateway, 'POST', path, apiKey, JSON.stringify({ version }));

/** A partner pinned to the oldest version, as one that existed before the newest would be. */
async function oldPartner(kind: 'commerce' | 'distribution', name: string) {
  const partner = await createPartner(db, { kind, name });
  await db
    .updateTable('partners')
    .set({ api_version: OLDEST })
    .where('partner_id', '=', partner.partnerId)
    .execute();
  return partner;
}

const storedPin = async (partnerId: string) =>
  (
    await db
      .selectFrom('partners')
      .select('api_version')
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow()
  ).api_version;

function expectProblem(answer: Answer, status: number, errorCode: string): void {
  expect(answer.status).toBe(status);
  expect(answer.type).toMatch(/^application\/problem\+json/);
  expect(answer.body.errorCode).toBe(errorCode);
}

describe('GET /v1/{commerce|marketfront}/api-version', () => {
  it('shows a new partner pinned to the newest version, with nothing newer', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'New' });
    const answer = await call(first, 'GET', commercePath, partner.apiKey);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      apiVersion: LATEST_API_VERSION,
      latestVersion: LATEST_API_VERSION,
      newerVersions: [],
      changes: [],
    });
  });

  it("shows an older pin and the versions after it, to the partner's test key too", async () => {
    const partner = await oldPartner('distribution', 'Old');
    const test = await createKey(db, partner.partnerId, { mode: 'test' });
    for (const apiKey of [partner.apiKey, test.apiKey]) {
      const { changes, ...pin } = (await call(first, 'GET', marketfrontPath, apiKey))
        .body as ApiVersionPin;
      expect(pin).toEqual({ apiVersion: OLDEST, latestVersion: NEWEST, newerVersions: [NEWEST] });
      // What upgrading changes: every change of the newer version, each named and described.
      expect(changes.map((change) => change.name)).toEqual(
        API_VERSION_CHANGES[NEWEST].map((change) => change.name),
      );
      expect(changes).toContainEqual({
        version: NEWEST,
        name: 'store-busy-status',
        description: expect.stringContaining('busy'),
      });
    }
  });
});

describe('POST /v1/{commerce|marketfront}/api-version', () => {
  it('moves the pin forward, and the other gateway, which had the key cached, sees it at once', async () => {
    const partner = await oldPartner('distribution', 'Upgrading');
    const bystander = await oldPartner('distribution', 'Bystander');
    for (const apiKey of [partner.apiKey, bystander.apiKey]) {
      expect((await call(second, 'GET', marketfrontPath, apiKey)).body.apiVersion).toBe(OLDEST);
    }

    const moved = await upgrade(partner.apiKey, NEWEST);
    expect(moved.status).toBe(200);
    expect(moved.body).toEqual({ version: NEWEST, previousVersion: OLDEST });
    expect(await storedPin(partner.partnerId)).toBe(NEWEST);
    // The first gateway heard its own announcement before answering; the second hears it
    // over its own connection, within a moment (its cache would keep the key a minute).
    expect((await call(first, 'GET', marketfrontPath, partner.apiKey)).body).toMatchObject({
      apiVersion: NEWEST,
      newerVersions: [],
    });
    await expect
      .poll(async () => (await call(second, 'GET', marketfrontPath, partner.apiKey)).body, {
        timeout: 5_000,
      })
      .toMatchObject({ apiVersion: NEWEST, newerVersions: [] });
    // Another partner is unaffected.
    expect((await call(second, 'GET', marketfrontPath, bystander.apiKey)).body.apiVersion).toBe(
      OLDEST,
    );
    expect(await storedPin(bystander.partnerId)).toBe(OLDEST);
  });

  it('answers the same pin again without changing anything (idempotent)', async () => {
    const partner = await createPartner(db, { kind: 'commerce', name: 'Same' });
    for (let i = 0; i < 2; i++) {
      const answer = await upgrade(partner.apiKey, NEWEST, second, commercePath);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ version: NEWEST, previousVersion: NEWEST });
    }
  });

  it('refuses to move the pin back: 409 API_VERSION_DOWNGRADE, the pin unchanged', async () => {
    const partner = await createPartner(db, { kind: 'distribution', name: 'Backward' });
    const answer = await upgrade(partner.apiKey, OLDEST);
    expectProblem(answer, 409, 'API_VERSION_DOWNGRADE');
    expect(answer.body.detail).toContain(NEWEST);
    expect(answer.body.errorCategory).toBe('conflict');
    expect(await storedPin(partner.partnerId)).toBe(NEWEST);
  });

  it('refuses a version that does not exist: 400 REQUEST_INVALID at /version', async () => {
    const partner = await oldPartner('commerce', 'Unknown');
    for (const version of ['2026-12-02', '2099-01-01', '2026-13-01', 'latest', '', ' 2026-12-01']) {
      const answer = await upgrade(partner.apiKey, version, first, commercePath);
      expectProblem(answer, 400, 'REQUEST_INVALID');
      expect(answer.body.errors).toContainEqual(expect.objectContaining({ pointer: '/version' }));
    }
    expect(await storedPin(partner.partnerId)).toBe(OLDEST);
  });

  it('refuses malformed and hostile bodies with a ProblemDetail, the pin unchanged', async () => {
    const partner = await oldPartner('distribution', 'Hostile');
    const post = (body: string, contentType?: string) =>
      call(first, 'POST', marketfrontPath, partner.apiKey, body, contentType);
    const invalid = [
      '{}',
      'null',
      '[]',
      '"2026-12-01"',
      '{"version":20261201}',
      '{"version":["2026-12-01"]}',
      '{"version":{"date":"2026-12-01"}}',
      '{"version":null}',
      '{"version":true}',
      '{"version":"2026-12-01","force":true}',
      '{"version":"2026-12-01","previousVersion":"2026-11-01"}',
      '{"__proto__":{"version":"2026-12-01"}}',
      '{"version":"2026-12-01","__proto__":{"isAdmin":true}}',
      '{"constructor":{"prototype":{"version":"2026-12-01"}}}',
      '{"version":"2026-12-01\\u0000"}',
      `{"version":"${'9'.repeat(900)}"}`,
    ];
    for (const body of invalid) {
      const answer = await post(body);
      expect(answer.status, body).toBe(400);
      expect(answer.type).toMatch(/^application\/problem\+json/);
      expect(answer.body.errorCode).toBe('REQUEST_INVALID');
    }
    expectProblem(await post('{"version":'), 400, 'REQUEST_INVALID');
    expectProblem(await post(`{"version":"${'9'.repeat(100_000)}"}`), 413, 'PAYLOAD_TOO_LARGE');
    expectProblem(await post('version=2026-12-01', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(await storedPin(partner.partnerId)).toBe(OLDEST);
  });

  it('refuses a test key (403 FORBIDDEN), a revoked key (401) and the other kind of partner (403)', async () => {
    const partner = await oldPartner('commerce', 'Refused');
    const test = await createKey(db, partner.partnerId, { mode: 'test' });
    expectProblem(await upgrade(test.apiKey, NEWEST, first, commercePath), 403, 'FORBIDDEN');

    const spare = await createKey(db, partner.partnerId);
    // Cached on both gateways, then revoked by the operator (whose command announces it; here
    // the gateways' caches are cleared by the same message, published by the test).
    for (const gateway of [first, second]) {
      expect((await call(gateway, 'GET', commercePath, spare.apiKey)).status).toBe(200);
    }
    await revokeKey(db, spare.keyId);
    env.nc.publish(
      authInvalidationSubject(env.prefix),
      JSON.stringify({ partnerId: partner.partnerId, keyId: spare.keyId }),
    );
    await env.nc.flush();
    expectProblem(await upgrade(spare.apiKey, NEWEST, first, commercePath), 401, 'UNAUTHORIZED');
    // The second gateway hears it over its own connection, within a moment.
    await expect
      .poll(async () => (await upgrade(spare.apiKey, NEWEST, second, commercePath)).body, {
        timeout: 5_000,
      })
      .toMatchObject({ status: 401, errorCode: 'UNAUTHORIZED' });
    expectProblem(await upgrade(partner.apiKey, NEWEST), 403, 'FORBIDDEN');
    expect(await storedPin(partner.partnerId)).toBe(OLDEST);
  });
});
