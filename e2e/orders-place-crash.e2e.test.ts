import { createPlatformClient } from '@pcp/client';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startServiceProcess, waitUntilServing } from '@pcp/testing/service-process';
import { startCatalogHost } from './catalog-host.js';
import { call, type HttpResult } from './http.js';
import { ingestCatalog } from './ingest.js';
import { newBuyer, sodaOrder } from './orders.js';

/**
 * Place survives its process dying at every recovery point, and its database going away:
 * the same key, retried, gives one order and one charge, and leaves no authorization open.
 * Ordering runs as its own process here (SIGKILLed by its failpoint), the rest in-process.
 */

const orderingEnv = {
  ORDERING_PLACE_LEASE_MS: '1000',
  ORDERING_SUBMISSION_ALLOW_HTTP: 'true',
  ORDERING_SUBMISSION_ALLOWLIST: '127.0.0.1/32',
};

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let storeEndpoint: Server;
let submitted = 0;
let commerce: { apiKey: string };
let distribution: { apiKey: string };
let storeId: string;
let storeEndpointUrl: string;
let ids: ReturnType<typeof cartTestCatalog>['ids'];
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: {
      RATE_LIMIT_WRITES_PER_MIN: '100000',
      // A killed ordering process never answers: the gateway gives up soon.
      ORDERING_PLACE_TIMEOUT_MS: '2500',
    },
  });
  await platform.ordering.stop();
  host = await startCatalogHost();
  storeEndpoint = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      submitted += 1;
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => storeEndpoint.listen(0, '127.0.0.1', resolve));
  const { port } = storeEndpoint.address() as AddressInfo;
  storeEndpointUrl = `http://127.0.0.1:${port}/orders`;
  commerce = await platform.newPartner('commerce');
  distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
  storeId = randomUUID();
  await call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
    apiKey: commerce.apiKey,
    body: storeProfile({
      availability: alwaysOpen,
      orderSubmissionUrl: storeEndpointUrl,
    }),
  });
  const catalog = cartTestCatalog(storeId);
  ids = catalog.ids;
  await ingestCatalog({
    baseUrl: platform.baseUrl,
    apiKey: commerce.apiKey,
    storeId,
    host,
    document: catalog.document,
  });
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await new Promise<void>((resolve) => storeEndpoint?.close(() => resolve()));
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

function startOrdering(extra: Record<string, string> = {}): ChildProcess {
  const child = startServiceProcess('ordering', env, { ...orderingEnv, ...extra });
  children.push(child);
  return child;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

async function stopOrdering(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await exited(child);
}

const buyer = () =>
  newBuyer(
    createPlatformClient({ baseUrl: platform.baseUrl, apiKey: distribution.apiKey }),
    '4242424242424242',
  );
const orderBody = (paymentId: string) => sodaOrder(ids, storeId, paymentId);

const place = (body: unknown, key: string, endUser: string): Promise<HttpResult> =>
  call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
    apiKey: distribution.apiKey,
    body,
    headers: { 'idempotency-key': key, 'x-end-user-id': endUser },
  });

/** Retry the key as a partner would: after Retry-After while the dead holder's lease runs. */
/** Each test outlives a process start and placeUntilSettled's deadline. */
const CRASH_TEST_TIMEOUT_MS = 60_000;

/**
 * Retry the key as a partner would until its outcome is final. By a deadline, not a count of
 * tries: on a busy machine the services take seconds to reconnect after their sessions end.
 */
async function placeUntilSettled(body: unknown, key: string, endUser: string) {
  const deadline = Date.now() + 30_000;
  let last: HttpResult | undefined;
  while (Date.now() < deadline) {
    last = await place(body, key, endUser);
    if (last.status !== 409 && last.status < 500) return last;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the key never settled; the last answer: ${last?.status} ${last?.text}`);
}

/** The end user's orders and the simulator's charges for its card since `before`. */
async function outcomeFor(endUser: string, before: number) {
  const { rows } = await sqlClient(
    `select count(*)::int as orders from ordering.orders where end_user_id = $1`,
    [endUser],
  );
  return { orders: rows[0].orders as number, charges: platform.processor.charges().slice(before) };
}

async function sqlClient(text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: env.databaseUrl });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

describe('the ordering process killed mid-place', { timeout: CRASH_TEST_TIMEOUT_MS }, () => {
  it.each(['validated', 'submitting', 'capturing', 'recorded'])(
    'after %s: the retried key gives one order, one captured charge',
    async (step) => {
      const doomed = startOrdering({ ORDERING_FAILPOINT: step });
      await waitUntilServing('ordering', env);
      const { endUser, paymentId } = await buyer();
      const body = orderBody(paymentId);
      const key = randomUUID();
      const before = platform.processor.charges().length;
      const submittedBefore = submitted;

      const lost = await place(body, key, endUser);
      expect(lost.status).toBeGreaterThanOrEqual(500);
      await exited(doomed);
      expect(doomed.signalCode).toBe('SIGKILL');

      const healthy = startOrdering();
      await waitUntilServing('ordering', env);
      const placed = await placeUntilSettled(body, key, endUser);
      expect(placed.status).toBe(201);
      expect(placed.body).toMatchObject({ state: 'open', status: 'confirmed' });
      // Killed after the answer was recorded, the retry is its replay.
      if (step === 'recorded') expect(placed.headers.get('idempotent-replayed')).toBe('true');

      const { orders, charges } = await outcomeFor(endUser, before);
      expect(orders).toBe(1);
      expect(charges).toHaveLength(1);
      expect(charges[0]).toMatchObject({ status: 'captured', capturedAmount: 2364 });
      // The store heard of the order once: a resumed attempt never submits it again.
      expect(submitted - submittedBefore).toBe(1);
      await stopOrdering(healthy);
    },
  );
});

describe('the database going away mid-place', { timeout: CRASH_TEST_TIMEOUT_MS }, () => {
  it('every connection terminated while authorizing: the retried key charges once', async () => {
    const ordering = startOrdering();
    await waitUntilServing('ordering', env);
    const { endUser, paymentId } = await buyer();
    const body = orderBody(paymentId);
    const key = randomUUID();
    const before = platform.processor.charges().length;
    platform.processor.setFaults({ latencyMs: 800 });
    try {
      const pending = place(body, key, endUser);
      await new Promise((resolve) => setTimeout(resolve, 400));
      // What a Postgres restart does to its clients: every session of the database ends.
      await sqlClient(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()`,
      );
      await pending;
    } finally {
      platform.processor.setFaults({ latencyMs: 0 });
    }
    const placed = await placeUntilSettled(body, key, endUser);
    expect(placed.status).toBe(201);
    const { orders, charges } = await outcomeFor(endUser, before);
    expect(orders).toBe(1);
    expect(charges).toHaveLength(1);
    expect(charges[0]?.status).toBe('captured');
    await stopOrdering(ordering);
  });
});

describe('a store without an order-submission URL', { timeout: CRASH_TEST_TIMEOUT_MS }, () => {
  const setSubmissionUrl = (orderSubmissionUrl: string | null) =>
    call(platform.baseUrl, 'PUT', `/v1/commerce/stores/${storeId}`, {
      apiKey: commerce.apiKey,
      body: storeProfile({ availability: alwaysOpen, orderSubmissionUrl }),
    });

  it('killed after authorizing (nothing to submit, so straight to capturing): one pending order, one charge', async () => {
    expect((await setSubmissionUrl(null)).status).toBe(200);
    try {
      const doomed = startOrdering({ ORDERING_FAILPOINT: 'capturing' });
      await waitUntilServing('ordering', env);
      const { endUser, paymentId } = await buyer();
      const body = orderBody(paymentId);
      const key = randomUUID();
      const before = platform.processor.charges().length;
      const submittedBefore = submitted;

      expect((await place(body, key, endUser)).status).toBeGreaterThanOrEqual(500);
      await exited(doomed);
      const healthy = startOrdering();
      await waitUntilServing('ordering', env);
      const placed = await placeUntilSettled(body, key, endUser);
      expect(placed.status).toBe(201);
      expect(placed.body).toMatchObject({ state: 'open', status: 'pending' });

      const { orders, charges } = await outcomeFor(endUser, before);
      expect(orders).toBe(1);
      expect(charges).toHaveLength(1);
      expect(charges[0]).toMatchObject({ status: 'captured', capturedAmount: 2364 });
      expect(submitted).toBe(submittedBefore);
      const { rows } = await sqlClient(
        `select step from ordering.place_attempts where idempotency_key = $1`,
        [key],
      );
      expect(rows).toEqual([{ step: 'recorded' }]);
      await stopOrdering(healthy);
    } finally {
      await setSubmissionUrl(storeEndpointUrl);
    }
  });

  // What a database crash right after the capture can lose: the relaxed commits (ordering's
  // `capturing`, payments' `authorized` and `captured`) since the last durable one (the
  // validated attempt, the charge): the rows as they stood before them.
  it.each([
    ['authorized', 'authorizing'],
    ['captured', 'authorized'],
  ])(
    'killed after the capture, a database crash losing the relaxed commits from %s on: the retried key finds the charge captured, one pending order',
    async (_lost, chargeStatus) => {
      expect((await setSubmissionUrl(null)).status).toBe(200);
      try {
        const doomed = startOrdering({ ORDERING_FAILPOINT: 'captured' });
        await waitUntilServing('ordering', env);
        const { endUser, paymentId } = await buyer();
        const body = orderBody(paymentId);
        const key = randomUUID();
        const before = platform.processor.charges().length;

        expect((await place(body, key, endUser)).status).toBeGreaterThanOrEqual(500);
        await exited(doomed);
        expect(doomed.signalCode).toBe('SIGKILL');
        const { rows: attempts } = await sqlClient(
          `update ordering.place_attempts set step = 'validated', charge_id = null, settle_at = null
            where idempotency_key = $1 and step = 'capturing' returning order_id`,
          [key],
        );
        expect(attempts).toHaveLength(1);
        const { rowCount } = await sqlClient(
          `update payments.charges
              set status = $2, captured_amount = 0,
                  processor_authorization_id = case when $2 = 'authorizing' then null
                                                    else processor_authorization_id end
            where order_id = $1 and status = 'captured'`,
          [attempts[0].order_id, chargeStatus],
        );
        expect(rowCount).toBe(1);

        const healthy = startOrdering();
        await waitUntilServing('ordering', env);
        const placed = await placeUntilSettled(body, key, endUser);
        expect(placed.status).toBe(201);
        expect(placed.body).toMatchObject({ state: 'open', status: 'pending' });
        const { orders, charges } = await outcomeFor(endUser, before);
        expect(orders).toBe(1);
        expect(charges).toHaveLength(1);
        expect(charges[0]).toMatchObject({ status: 'captured', capturedAmount: 2364 });
        const { rows } = await sqlClient(
          `select status, captured_amount from payments.charges where order_id = $1`,
          [attempts[0].order_id],
        );
        expect(rows).toEqual([{ status: 'captured', captured_amount: 2364 }]);
        await stopOrdering(healthy);
      } finally {
        await setSubmissionUrl(storeEndpointUrl);
      }
    },
  );
});
