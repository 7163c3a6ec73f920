import { subjects } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '../../src/app.js';
import { recordDeliveries } from '../../src/webhooks/delivery-record.repository.js';

// A dispatcher slot is free once its call returned: a try whose outcome cannot be written yet
// (its row locked here, as a slow commit would hold it) does not hold the next partner's
// delivery back, while its own lease holds until the outcome is written.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
let ordering: ReturnType<typeof createOrderingService>;
let server: Server;
/** The paths the receiver was called on, in order. */
const calls: string[] = [];
/** Called when the receiver gets its first call, before it answers. */
let onFirstCall: () => Promise<void> = () => Promise.resolve();

async function until(done: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

beforeAll(async () => {
  env = await createTestEnvironment();
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      calls.push(request.url ?? '');
      const answer = calls.length === 1 ? onFirstCall() : Promise.resolve();
      void answer.then(() => response.writeHead(204).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-webhook-dispatch-slots',
  });
  ordering = createOrderingService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('ordering'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 5_000,
    db,
    config: loadConfig(orderingEnvSchema, {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_CONCURRENCY: '1',
    }),
  });
  await ordering.start();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
});

afterAll(async () => {
  await ordering?.stop(5_000);
  await new Promise((resolve) => server?.close(resolve));
  await db?.destroy();
  await env?.cleanup();
});

/** A distribution partner whose endpoint is the receiver at `/<path>`. */
async function partner(path: string): Promise<string> {
  const partnerId = randomUUID();
  const context: RequestContext = {
    requestId: randomUUID(),
    partnerId,
    partnerKind: 'distribution',
    mode: 'live',
  };
  const { port } = server.address() as AddressInfo;
  await bus.request(
    subjects.ordering.putWebhook,
    { url: `http://127.0.0.1:${port}/${path}`, events: ['order.created'] },
    context,
  );
  return partnerId;
}

const delivery = (partnerId: string) => ({
  deliveryId: randomUUID(),
  eventId: randomUUID(),
  partnerId,
  orderId: randomUUID(),
  storeId: randomUUID(),
  version: 1,
  eventType: 'order.created' as const,
  payload: JSON.stringify({ type: 'order.created' }),
  occurredAt: new Date(),
  origin: null,
});

describe('a dispatcher slot', () => {
  it('is free once the call returned, before its outcome is written', async () => {
    const [first, second] = [delivery(await partner('a')), delivery(await partner('b'))];
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked = () => undefined as void;
    const lockHeld = new Promise<void>((resolve) => (locked = resolve));
    // The first try's outcome waits for its row, locked before the receiver answers it.
    let lock: Promise<void> = Promise.resolve();
    onFirstCall = () => {
      lock = db.transaction().execute(async (trx) => {
        await sql`select 1 from webhook_deliveries where delivery_id = ${first.deliveryId}
                   for update`.execute(trx);
        locked();
        await held;
      });
      return lockHeld;
    };
    const status = (deliveryId: string) =>
      db
        .selectFrom('webhook_deliveries')
        .select(['status', 'lease_owner'])
        .where('delivery_id', '=', deliveryId)
        .executeTakeFirstOrThrow();
    try {
      await recordDeliveries(db, [first], 100);
      await until(() => calls.length === 1);
      await recordDeliveries(db, [second], 100);
      // One slot: the second partner's delivery is made while the first's outcome waits.
      await until(() => calls.length === 2);
      expect(calls).toEqual(['/a', '/b']);
      expect(await status(first.deliveryId)).toMatchObject({ status: 'pending' });
      expect((await status(first.deliveryId)).lease_owner).not.toBeNull();
    } finally {
      release();
      await lock;
    }
    await until(async () => (await status(first.deliveryId)).status === 'delivered');
    await until(async () => (await status(second.deliveryId)).status === 'delivered');
    expect(calls).toEqual(['/a', '/b']);
  });
});
