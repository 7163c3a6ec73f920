import { createPlatformClient, type PlatformClient } from '@pcp/client';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { call } from './http.js';
import { newBuyer, sodaOrder, storeWithSodas } from './orders.js';

/**
 * How many commits one place waits on the WAL flush for (docs/operations.md#what-place-commits-durably):
 * only the points that hold an external call's idempotency key (the validated attempt with its
 * order id, payments' charge with its id) and the answer (the order) are durable; the rest
 * commit relaxed. Counted from the statements ordering and payments send (the platform runs in
 * this process): a transaction (one statement alone, or begin to commit) that writes and does
 * not set synchronous_commit off for itself is a durable commit.
 */

interface Sent {
  readonly app: string;
  readonly connection: object;
  readonly text: string;
  readonly values: readonly unknown[];
}

const sent: Sent[] = [];
const originalQuery = pg.Client.prototype.query;

/** Keep every statement the platform's pg clients send, as it is sent. */
function recordStatements(): void {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first, second] = args as [unknown, unknown];
    const text =
      typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
    const values =
      (typeof first === 'object' && first !== null
        ? (first as { values?: unknown[] }).values
        : undefined) ?? (Array.isArray(second) ? second : []);
    const app = (this as unknown as { connectionParameters: { application_name?: string } })
      .connectionParameters.application_name;
    sent.push({ app: app ?? '', connection: this, text, values });
    return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
}

const WRITES = /\b(insert\s+into|update\s+"?\w+"?\s+set|delete\s+from)\b/i;
const RELAXED = /set_config\('synchronous_commit', 'off', true\)/;

/** The transactions of `app` that wrote with one of `ids` among their values, durable or not. */
function commitsOf(app: string, ids: readonly string[]) {
  const transactions: Sent[][] = [];
  const open = new Map<object, Sent[]>();
  for (const statement of sent.filter((s) => s.app === app)) {
    const verb = statement.text.trim().toLowerCase();
    const block = open.get(statement.connection);
    if (verb.startsWith('begin') || verb.startsWith('start transaction')) {
      open.set(statement.connection, []);
    } else if (verb === 'commit') {
      if (block) transactions.push(block);
      open.delete(statement.connection);
    } else if (verb === 'rollback') {
      open.delete(statement.connection);
    } else if (block) {
      block.push(statement);
    } else {
      transactions.push([statement]);
    }
  }
  const mentions = (statement: Sent) =>
    statement.values.some((value) => ids.some((id) => String(value).includes(id)));
  const ours = transactions.filter(
    (statements) =>
      statements.some((statement) => WRITES.test(statement.text)) && statements.some(mentions),
  );
  const durable = ours.filter((statements) => !statements.some((s) => RELAXED.test(s.text)));
  return { all: ours.length, durable: durable.length };
}

let env: TestEnvironment;
let platform: TestPlatform;
let host: Awaited<ReturnType<typeof startCatalogHost>>;
let market: PlatformClient;
let distribution: { apiKey: string };
let store: Awaited<ReturnType<typeof storeWithSodas>>;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_WRITES_PER_MIN: '100000' },
  });
  host = await startCatalogHost();
  const commerce = createPlatformClient({
    baseUrl: platform.baseUrl,
    apiKey: (await platform.newPartner('commerce')).apiKey,
  });
  distribution = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
  market = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: distribution.apiKey });
  // No submission URL: place's points are started, validated, capturing and recorded.
  store = await storeWithSodas(commerce, host, { orderSubmissionUrl: undefined });
});

afterAll(async () => {
  pg.Client.prototype.query = originalQuery;
  await host?.close();
  await platform?.stop();
  await env?.cleanup();
});

describe('the commits of one place', () => {
  it('waits on the WAL flush three times: the validated attempt, the charge, the order', async () => {
    const { endUser, paymentId } = await newBuyer(market, '4242424242424242');
    const key = randomUUID();
    recordStatements();
    let placed;
    try {
      placed = await call(platform.baseUrl, 'POST', '/v1/marketfront/orders/place', {
        apiKey: distribution.apiKey,
        body: sodaOrder(store.ids, store.storeId, paymentId),
        headers: { 'idempotency-key': key, 'x-end-user-id': endUser },
      });
    } finally {
      pg.Client.prototype.query = originalQuery;
    }
    expect(placed.status).toBe(201);
    const orderId = (placed.body as { orderId: string }).orderId;
    const charge = await platform.paymentsDb
      .selectFrom('charges')
      .select(['charge_id', 'status'])
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    expect(charge.status).toBe('captured');
    const ids = [key, orderId, charge.charge_id];

    // Ordering: started (relaxed), validated, capturing (relaxed), recorded.
    expect(commitsOf('test-ordering', ids)).toEqual({ all: 4, durable: 2 });
    // Payments: the charge, authorized (relaxed), captured (relaxed).
    expect(commitsOf('test-payments', ids)).toEqual({ all: 3, durable: 1 });
  });
});
