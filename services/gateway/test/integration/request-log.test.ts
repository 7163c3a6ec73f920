import {
  LATEST_API_VERSION,
  parseContract,
  problemDetail,
  sessionCookieName,
  type ApiKeyList,
  type RateLimitUsage,
  type RequestLogEntry,
} from '@pcp/contracts';
import { createDatabase, createMetrics } from '@pcp/service-kit';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createKey,
  createPartner,
  revokeKey,
  setRateLimits,
} from '../../src/admin/partner-admin.js';
import type { GatewayDatabase, GatewayService } from '../../src/app.js';
import { createRequestRecorder } from '../../src/http/request-recorder.js';
import { createGatewayDatabase, createLoneGateway } from '../support/lone-gateway.js';

// The request log, keys and rate-limit usage (docs/guide/requests.md) on a gateway alone:
// these routes read the gateway's own database and Redis, no service behind it.

let env: TestEnvironment;
let db: Kysely<GatewayDatabase>;
let gateway: GatewayService;
const opened: GatewayService[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createGatewayDatabase(env);
  gateway = await startGateway({ REQUEST_LOG_FLUSH_MS: '20' });
});

afterAll(async () => {
  for (const started of opened) await started.stop();
  await db?.destroy();
  await env?.cleanup();
});

async function startGateway(config: Record<string, string>): Promise<GatewayService> {
  const started = createLoneGateway(env, db, config);
  opened.push(started);
  await started.start();
  return started;
}

interface Answer {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
}

async function send(
  path: string,
  apiKey: string | undefined,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: unknown;
    to?: GatewayService;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${(options.to ?? gateway).url()}${path}`, {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? JSON.parse(text) : undefined,
  };
}

type Entry = RequestLogEntry;

/** Poll `read` until `done` holds (the log is written within a flush). */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every entry of the caller's log matching `query`, page by page. */
async function readLog(apiKey: string, query = '', area = 'commerce'): Promise<Entry[]> {
  const entries: Entry[] = [];
  let cursor: string | undefined;
  do {
    const page = await send(
      `/v1/${area}/requests?limit=100${query}${cursor ? `&before=${cursor}` : ''}`,
      apiKey,
    );
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    entries.push(...(page.body.requests as Entry[]));
    cursor = page.body.nextCursor;
  } while (cursor);
  return entries;
}

/** The log once it holds every one of `requestIds`. */
const logWith = (apiKey: string, requestIds: string[], query = '', area = 'commerce') =>
  eventually(
    () => readLog(apiKey, query, area),
    (entries) => requestIds.every((id) => entries.some((entry) => entry.requestId === id)),
  );

const newPartner = (kind: 'commerce' | 'distribution' = 'commerce') =>
  createPartner(db, { kind, name: `Log ${randomUUID()}` });

function expectProblem(answer: Answer, status: number, errorCode: string) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.headers.get('content-type')).toContain('application/problem+json');
  expect(parseContract(problemDetail, answer.body).success).toBe(true);
  expect(answer.body.errorCode).toBe(errorCode);
}

describe('the request log', () => {
  it('keeps a failed call with its errorCode, requestId and Idempotency-Key, never its query or body', async () => {
    const partner = await newPartner();
    const requestId = randomUUID();
    const failed = await send(
      '/v1/commerce/nothing-here?email=pat%40example.com&q=secret-query',
      partner.apiKey,
      {
        method: 'POST',
        headers: { 'x-request-id': requestId, 'idempotency-key': 'attempt-1' },
        body: { cardNumber: 'secret-body-4242' },
      },
    );
    expectProblem(failed, 404, 'NOT_FOUND');
    const invalidId = randomUUID();
    expectProblem(
      await send('/v1/commerce/requests?limit=0', partner.apiKey, {
        headers: { 'x-request-id': invalidId },
      }),
      400,
      'REQUEST_INVALID',
    );

    const entries = await logWith(partner.apiKey, [requestId, invalidId]);
    const entry = entries.find((each) => each.requestId === requestId);
    expect(entry).toEqual({
      at: expect.any(String),
      method: 'POST',
      path: '/v1/commerce/nothing-here',
      status: 404,
      errorCode: 'NOT_FOUND',
      requestId,
      clientRequestId: requestId,
      idempotencyKey: 'attempt-1',
      latencyMs: expect.any(Number),
      // Read and answered in the newest version: the partner has no pin and sent no header.
      apiVersion: LATEST_API_VERSION,
    });
    expect(Math.abs(Date.parse(entry!.at) - Date.now())).toBeLessThan(30_000);
    expect(entries.find((each) => each.requestId === invalidId)).toMatchObject({
      path: '/v1/commerce/requests',
      status: 400,
      errorCode: 'REQUEST_INVALID',
    });
    // A success has no errorCode; nothing of the query or the body is stored anywhere.
    expect(
      entries.filter((each) => each.status === 200).every((each) => !('errorCode' in each)),
    ).toBe(true);
    const { rows } = await sql`select * from request_log`.execute(db);
    const stored = JSON.stringify(rows);
    for (const secret of ['example.com', 'pat%40', 'secret-query', 'secret-body', 'email']) {
      expect(stored).not.toContain(secret);
    }
  });

  it('logs a console session’s requests under its key’s tenant, and reads them by the cookie', async () => {
    const partner = await newPartner();
    const signedIn = await send('/v1/sessions', undefined, {
      method: 'POST',
      body: { apiKey: partner.apiKey },
    });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(201);
    const token = new RegExp(`^${sessionCookieName}=([^;]+)`).exec(
      signedIn.headers.getSetCookie()[0] ?? '',
    )?.[1];
    const cookie = { cookie: `${sessionCookieName}=${token}` };
    const requestId = randomUUID();
    expectProblem(
      await send('/v1/commerce/requests?limit=0', undefined, {
        headers: { ...cookie, 'x-request-id': requestId },
      }),
      400,
      'REQUEST_INVALID',
    );
    const entries = await eventually(
      async () => (await send('/v1/commerce/requests', undefined, { headers: cookie })).body,
      (page: { requests: Entry[] }) => page.requests.some((entry) => entry.requestId === requestId),
    );
    expect(entries.requests.find((entry) => entry.requestId === requestId)).toMatchObject({
      path: '/v1/commerce/requests',
      status: 400,
      errorCode: 'REQUEST_INVALID',
    });
    expect(entries.requests.map((entry) => entry.path)).toContain('/v1/sessions');
  });

  it('does not log a request without a valid key', async () => {
    const requestId = randomUUID();
    expectProblem(
      await send('/v1/commerce/requests', undefined, { headers: { 'x-request-id': requestId } }),
      401,
      'UNAUTHORIZED',
    );
    // Ten flushes later.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { rows } = await sql`select 1 from request_log where request_id = ${requestId}`.execute(
      db,
    );
    expect(rows).toEqual([]);
  });

  it('pages newest first with an opaque cursor, and filters by status and errorCode', async () => {
    const partner = await newPartner();
    const missing = Array.from({ length: 7 }, () => randomUUID());
    for (const requestId of missing) {
      await send(`/v1/commerce/missing-${requestId}`, partner.apiKey, {
        headers: { 'x-request-id': requestId },
      });
    }
    const invalid = randomUUID();
    await send('/v1/commerce/requests?limit=abc', partner.apiKey, {
      headers: { 'x-request-id': invalid },
    });
    await logWith(partner.apiKey, [...missing, invalid]);

    const pages: Entry[][] = [];
    let cursor: string | undefined;
    do {
      const page = await send(
        `/v1/commerce/requests?limit=3&status=404${cursor ? `&before=${cursor}` : ''}`,
        partner.apiKey,
      );
      expect(page.status).toBe(200);
      pages.push(page.body.requests);
      cursor = page.body.nextCursor;
      if (cursor !== undefined) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (cursor);
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(pages.flat().map((entry) => entry.requestId)).toEqual([...missing].reverse());
    const times = pages.flat().map((entry) => Date.parse(entry.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const errors = await readLog(partner.apiKey, '&status=error');
    expect(errors.map((entry) => entry.requestId).sort()).toEqual([...missing, invalid].sort());
    const byCode = await readLog(partner.apiKey, '&errorCode=REQUEST_INVALID');
    expect(byCode.map((entry) => entry.requestId)).toEqual([invalid]);
    const successes = await readLog(partner.apiKey, '&status=200');
    expect(successes.length).toBeGreaterThan(0);
    expect(successes.every((entry) => entry.status === 200)).toBe(true);
    const defaultPage = await send('/v1/commerce/requests?status=404', partner.apiKey);
    expect(defaultPage.body.requests).toHaveLength(7);
    expect(defaultPage.body).not.toHaveProperty('nextCursor');
  });

  it('groups the last 24 hours’ errors by code, each with its latest request and its page', async () => {
    const partner = await newPartner();
    const first = await send('/v1/commerce/gone', partner.apiKey);
    const latest = await send('/v1/commerce/gone-again', partner.apiKey);
    const invalid = await send('/v1/commerce/requests?status=600', partner.apiKey);
    expectProblem(invalid, 400, 'REQUEST_INVALID');
    const ids = [first, latest, invalid].map((answer) => answer.body.requestId as string);
    await logWith(partner.apiKey, ids);
    // An error older than the day is not counted.
    await db
      .insertInto('request_log')
      .values({
        tenant_id: partner.partnerId,
        at: new Date(Date.now() - 25 * 3_600_000),
        method: 'GET',
        path: '/v1/commerce/old',
        status: 404,
        error_code: 'NOT_FOUND',
        request_id: 'old',
        client_request_id: null,
        idempotency_key: null,
        latency_ms: 1,
        key_id: partner.keyId,
        api_version: null,
      })
      .execute();

    const grouped = await send('/v1/commerce/requests/errors', partner.apiKey);
    expect(grouped.status).toBe(200);
    expect(Math.abs(Date.parse(grouped.body.since) - (Date.now() - 86_400_000))).toBeLessThan(
      30_000,
    );
    expect(grouped.body.groups).toEqual([
      {
        errorCode: 'REQUEST_INVALID',
        status: 400,
        count: 1,
        lastAt: expect.any(String),
        lastRequestId: ids[2],
        docsUrl: invalid.body.type,
      },
      {
        errorCode: 'NOT_FOUND',
        status: 404,
        count: 2,
        lastAt: expect.any(String),
        lastRequestId: ids[1],
        docsUrl: latest.body.type,
      },
    ]);
  });

  it('shows each partner and each mode its own requests only', async () => {
    const commerce = await newPartner();
    const commerceTest = await createKey(db, commerce.partnerId, { mode: 'test' });
    const other = await newPartner();
    const market = await newPartner('distribution');
    const callers = [
      { apiKey: commerce.apiKey, area: 'commerce' },
      { apiKey: commerceTest.apiKey, area: 'commerce' },
      { apiKey: other.apiKey, area: 'commerce' },
      { apiKey: market.apiKey, area: 'marketfront' },
    ];
    const ids = callers.map(() => randomUUID());
    await Promise.all(
      callers.map(({ apiKey, area }, i) =>
        send(`/v1/${area}/nothing`, apiKey, { headers: { 'x-request-id': ids[i]! } }),
      ),
    );
    for (const [i, { apiKey, area }] of callers.entries()) {
      const seen = (await logWith(apiKey, [ids[i]!], '', area)).map((entry) => entry.requestId);
      expect(seen).toContain(ids[i]);
      for (const foreign of ids.filter((_, j) => j !== i)) expect(seen).not.toContain(foreign);
    }
    // Each kind reads its own prefix only.
    expectProblem(await send('/v1/commerce/requests', market.apiKey), 403, 'FORBIDDEN');
    expectProblem(await send('/v1/marketfront/requests', commerce.apiKey), 403, 'FORBIDDEN');
  });

  it('answers malformed, oversized and unknown parameters with a ProblemDetail', async () => {
    const partner = await newPartner();
    // Cursors the platform did not issue: refused at their parameter, as on every list.
    const badCursors = [
      'before=!!!',
      'before=Zm9v', // base64url, not a cursor
      `before=${cursorOf('2026-02-30T00:00:00.000000Z|1')}`, // no such day
      `before=${cursorOf('2026-11-27T00:00:00.000000Z|9223372036854775808')}`, // beyond bigint
      `before=${cursorOf(`2026-11-27T00:00:00.000000Z|${randomUUID()}`)}`, // another list's
      `before=${cursorOf('2026-11-27T00:00:00.000000Z|01')}`,
    ];
    const garbage = [
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'limit=-1',
      ...badCursors,
      `before=${'A'.repeat(201)}`,
      'before=',
      'status=600',
      'status=errors',
      'status=40',
      'errorCode=not_found',
      `errorCode=${'A'.repeat(10_000)}`,
      'unknown=1',
      'limit=1&limit=2',
      'status[]=error',
    ];
    for (const query of garbage) {
      const answer = await send(`/v1/commerce/requests?${query}`, partner.apiKey);
      expectProblem(answer, 400, 'REQUEST_INVALID');
      expect(JSON.stringify(answer.body)).not.toMatch(/at [\w.]+ \(|node_modules|Zod/);
      if (badCursors.includes(query)) {
        expect(answer.body.errors).toEqual([expect.objectContaining({ pointer: '/before' })]);
      }
    }
    for (const path of [
      '/v1/commerce/requests/errors?x=1',
      '/v1/commerce/keys?x=1',
      '/v1/commerce/rate-limits?x=1',
    ]) {
      // The other reads take no parameters: unknown ones are ignored, as on every route.
      expect((await send(path, partner.apiKey)).status).toBe(200);
    }
    // A query beyond what the platform reads at all: Node's parser refuses it.
    const huge = await rawGet(
      `/v1/commerce/requests?errorCode=${'A'.repeat(20_000)}`,
      partner.apiKey,
    );
    expect(huge.status).toBe(400);
    expect(JSON.parse(huge.body).errorCode).toBe('REQUEST_INVALID');
  });
});

/** A cursor of the request log's spelling (base64url of `<created_at>|<id>`), issued or not. */
const cursorOf = (text: string) => Buffer.from(text).toString('base64url');

/** A GET whose request line Node's client would send as it is (fetch too, but without a body). */
function rawGet(path: string, apiKey: string): Promise<{ status: number; body: string }> {
  const url = new URL(gateway.url());
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, headers: { authorization: `Bearer ${apiKey}` } },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('retention and the per-partner cap', () => {
  it('deletes requests past the retention, and each tenant’s beyond its newest', async () => {
    const swept = await startGateway({
      REQUEST_LOG_FLUSH_MS: '20',
      REQUEST_LOG_MAX_PER_PARTNER: '5',
      REQUEST_LOG_SWEEP_INTERVAL_MS: '200',
    });
    const busy = await newPartner();
    const quiet = await newPartner();
    const old = {
      at: new Date(Date.now() - 31 * 86_400_000),
      method: 'GET',
      path: '/v1/commerce/stores',
      status: 200,
      error_code: null,
      client_request_id: null,
      idempotency_key: null,
      latency_ms: 3,
      key_id: busy.keyId,
      api_version: null,
    };
    await db
      .insertInto('request_log')
      .values([
        { ...old, tenant_id: randomUUID(), request_id: 'old-elsewhere' },
        { ...old, tenant_id: quiet.partnerId, request_id: 'old-quiet' },
      ])
      .execute();
    const busyIds = Array.from({ length: 8 }, () => randomUUID());
    for (const requestId of busyIds) {
      await send('/v1/commerce/nothing', busy.apiKey, {
        to: swept,
        headers: { 'x-request-id': requestId },
      });
    }
    const quietIds = [randomUUID(), randomUUID()];
    for (const requestId of quietIds) {
      await send('/v1/commerce/nothing', quiet.apiKey, {
        to: swept,
        headers: { 'x-request-id': requestId },
      });
    }

    const idsOf = async (tenantId: string) =>
      (
        await db
          .selectFrom('request_log')
          .select('request_id')
          .where('tenant_id', '=', tenantId)
          .orderBy('id')
          .execute()
      ).map((row) => row.request_id);
    const busyKept = await eventually(
      () => idsOf(busy.partnerId),
      (kept) => kept.length === 5 && kept.at(-1) === busyIds.at(-1),
    );
    expect(busyKept).toEqual(busyIds.slice(3));
    const quietKept = await eventually(
      () => idsOf(quiet.partnerId),
      (kept) => !kept.includes('old-quiet') && kept.length === 2,
    );
    expect(quietKept).toEqual(quietIds);
    const { rows } =
      await sql`select 1 from request_log where request_id = 'old-elsewhere'`.execute(db);
    expect(rows).toEqual([]);
  });
});

describe('the buffer', () => {
  /** The value of the dropped-rows counter with `reason`. */
  const dropped = async (opsUrl: string, reason: string) => {
    const text = await (await fetch(`${opsUrl}/metrics`)).text();
    const line = text
      .split('\n')
      .find(
        (each) =>
          each.startsWith('pcp_gateway_request_log_dropped_total{') &&
          each.includes(`reason="${reason}"`),
      );
    return Number(line?.split(' ').at(-1) ?? 0);
  };

  it('is written when the gateway closes, the oldest dropped (and counted) past its cap', async () => {
    const closing = await startGateway({
      REQUEST_LOG_FLUSH_MS: '60000',
      REQUEST_LOG_BUFFER_MAX_ROWS: '3',
    });
    const partner = await newPartner();
    const ids = Array.from({ length: 5 }, () => randomUUID());
    for (const requestId of ids) {
      expect(
        (
          await send('/v1/commerce/keys', partner.apiKey, {
            to: closing,
            headers: { 'x-request-id': requestId },
          })
        ).status,
      ).toBe(200);
    }
    const written = () =>
      db
        .selectFrom('request_log')
        .select('request_id')
        .where('tenant_id', '=', partner.partnerId)
        .orderBy('id')
        .execute();
    expect(await written()).toEqual([]);
    expect(await dropped(closing.opsUrl(), 'buffer_full')).toBe(2);

    opened.splice(opened.indexOf(closing), 1);
    await closing.stop();
    expect((await written()).map((row) => row.request_id)).toEqual(ids.slice(2));
    const key = await db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('key_id', '=', partner.keyId)
      .executeTakeFirstOrThrow();
    expect(key.last_used_at).not.toBeNull();
  });
});

describe('a database that refuses the writes', () => {
  it('drops (and counts) each refused batch, and goes on recording', async () => {
    // A schema with no request_log: every INSERT fails, as a database in trouble would.
    const broken = createDatabase<GatewayDatabase>({
      url: env.databaseUrl,
      schema: 'no_such_schema',
      applicationName: 'test-gateway-broken',
    });
    const metrics = createMetrics('gateway');
    const recorder = createRequestRecorder({
      db: broken,
      logger: env.logger,
      metrics,
      flushMs: 60_000,
      maxBuffered: 100,
      maxBufferedPerTenant: 100,
      retentionDays: 30,
      maxPerTenant: 100,
      sweepIntervalMs: 86_400_000,
    });
    const refused = async () =>
      (
        await metrics.registry.getSingleMetric('pcp_gateway_request_log_dropped_total')?.get()
      )?.values.find((value) => value.labels.reason === 'write_failed')?.value ?? 0;
    const row = (requestId: string) => ({
      tenant_id: randomUUID(),
      at: new Date(),
      method: 'GET',
      path: '/v1/commerce/stores',
      status: 200,
      error_code: null,
      request_id: requestId,
      client_request_id: null,
      idempotency_key: null,
      latency_ms: 1,
      key_id: '0123456789abcdef',
      api_version: null,
    });
    try {
      recorder.record(row('first'));
      recorder.record(row('second'));
      await recorder.flush();
      expect(await refused()).toBe(2);
      recorder.record(row('third'));
      await recorder.close();
      expect(await refused()).toBe(3);
    } finally {
      await broken.destroy();
    }
  });
});

describe('the keys', () => {
  it('lists the partner’s keys of the caller’s mode, with their last use and revocation', async () => {
    const partner = await newPartner();
    const second = await createKey(db, partner.partnerId);
    const revoked = await createKey(db, partner.partnerId);
    await revokeKey(db, revoked.keyId);
    const test = await createKey(db, partner.partnerId, { mode: 'test' });
    const other = await newPartner();

    const live = await send('/v1/commerce/keys', partner.apiKey);
    expect(live.status).toBe(200);
    const keys = live.body.keys as ApiKeyList['keys'];
    expect(keys.map((key) => key.keyId).sort()).toEqual(
      [partner.keyId, second.keyId, revoked.keyId].sort(),
    );
    expect(keys.every((key) => key.mode === 'live')).toBe(true);
    expect(keys.find((key) => key.keyId === revoked.keyId)?.revokedAt).toEqual(expect.any(String));
    expect(keys.find((key) => key.keyId === second.keyId)).not.toHaveProperty('lastUsedAt');
    expect(JSON.stringify(live.body)).not.toContain(partner.apiKey.slice(-43));

    const testKeys = await send('/v1/commerce/keys', test.apiKey);
    expect(testKeys.body.keys.map((key: { keyId: string }) => key.keyId)).toEqual([test.keyId]);
    const others = await send('/v1/commerce/keys', other.apiKey);
    expect(others.body.keys.map((key: { keyId: string }) => key.keyId)).toEqual([other.keyId]);

    // Used once: its last use is written within a flush.
    const before = Date.now();
    expect((await send('/v1/commerce/rate-limits', second.apiKey)).status).toBe(200);
    const used = await eventually(
      async () => (await send('/v1/commerce/keys', partner.apiKey)).body.keys as typeof keys,
      (listed) => listed.some((key) => key.keyId === second.keyId && key.lastUsedAt !== undefined),
    );
    const lastUsedAt = Date.parse(used.find((key) => key.keyId === second.keyId)!.lastUsedAt!);
    expect(lastUsedAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(lastUsedAt).toBeLessThanOrEqual(Date.now());
  });
});

describe('the rate-limit usage', () => {
  it('reads each budget of the partner from the counters, the read itself counted', async () => {
    const market = await newPartner('distribution');
    await setRateLimits(db, market.partnerId, { reads: 500 });
    const start = Date.now();
    const first = await send('/v1/marketfront/rate-limits', market.apiKey);
    expect(first.status).toBe(200);
    const usage = first.body.limits as RateLimitUsage['limits'];
    expect(usage.map((limit) => limit.bucket)).toEqual(['reads', 'writes', 'discovery']);
    expect(usage[0]).toMatchObject({ limitPerMinute: 500, used: 1, remaining: 499 });
    const resetsIn = Date.parse(usage[0]!.resetsAt) - start;
    expect(resetsIn).toBeGreaterThan(55_000);
    expect(resetsIn).toBeLessThanOrEqual(61_000);
    // No window is open for writes and discovery: the whole budget is left now.
    expect(usage[1]).toMatchObject({ limitPerMinute: 100, used: 0, remaining: 100 });
    expect(Math.abs(Date.parse(usage[1]!.resetsAt) - Date.now())).toBeLessThan(5_000);
    expect(usage[2]).toMatchObject({ limitPerMinute: 60, used: 0, remaining: 60 });

    for (let i = 0; i < 3; i++) await send('/v1/marketfront/keys', market.apiKey);
    const second = await send('/v1/marketfront/rate-limits', market.apiKey);
    expect(second.body.limits[0]).toMatchObject({ used: 5, remaining: 495 });
    expect(second.headers.get('x-ratelimit-remaining')).toBe('495');

    // The test mode has a budget of its own; a commerce partner has no discovery.
    const test = await createKey(db, market.partnerId, { mode: 'test' });
    const testUsage = await send('/v1/marketfront/rate-limits', test.apiKey);
    expect(testUsage.body.limits[0]).toMatchObject({ limitPerMinute: 500, used: 1 });
    const commerce = await newPartner();
    const commerceUsage = await send('/v1/commerce/rate-limits', commerce.apiKey);
    expect(commerceUsage.body.limits.map((limit: { bucket: string }) => limit.bucket)).toEqual([
      'reads',
      'writes',
    ]);
  });
});
