import {
  events,
  subjects,
  webhookAttemptNotice,
  webhookAttemptNotices,
  type WebhookAttemptNotice,
} from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Subscription } from 'nats';
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
import { deliveryAttempts } from '../../src/webhooks/delivery-attempts.repository.js';

// A store event's delivery keeps each try as an order event's does (outcome, response status,
// latency, error) and announces it with the same webhook.delivery_attempted notice, orderId
// null: published on the real JetStream as stores' outbox does, delivered over loopback HTTP
// to a receiver that fails twice, then takes it.

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
let ordering: ReturnType<typeof createOrderingService>;
let server: Server;
/** Answers the receiver gives, in order; 204 once they run out. */
const answers = [500, 503];
const partnerId = randomUUID();
const notices: WebhookAttemptNotice[] = [];
let subscription: Subscription;

async function until(done: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the tries');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  env = await createTestEnvironment();
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(answers.shift() ?? 204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-store-event-delivery-attempts',
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
      WEBHOOK_POLL_MS: '100',
      WEBHOOK_RETRY_SCHEDULE_MS: '0,100,100',
    }),
  });
  await ordering.start();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  subscription = env.nc.subscribe(`${env.prefix}.${webhookAttemptNotices.subject(partnerId)}`, {
    callback: (error, msg) => {
      if (!error) notices.push(webhookAttemptNotice.parse(msg.json()));
    },
  });
});

afterAll(async () => {
  subscription?.unsubscribe();
  await ordering?.stop(5_000);
  await new Promise((resolve) => server?.close(resolve));
  await db?.destroy();
  await env?.cleanup();
});

describe('a store event delivery', () => {
  it('keeps every try, lists them and announces each, like an order event’s', async () => {
    const { port } = server.address() as AddressInfo;
    const context: RequestContext = {
      requestId: randomUUID(),
      partnerId,
      partnerKind: 'distribution',
      mode: 'live',
    };
    await bus.request(
      subjects.ordering.putWebhook,
      { url: `http://127.0.0.1:${port}/hooks`, events: ['store.status_changed'] },
      context,
    );
    const storeId = randomUUID();
    const envelope = {
      id: randomUUID(),
      type: events.storeChanged.schema.shape.type.value,
      occurredAt: new Date().toISOString(),
      version: 1,
      data: {
        event: 'store.status_changed',
        storeId,
        status: 'busy',
        reason: null,
        pausedAt: null,
        resumeAt: null,
        extraPrepMinutes: 15,
        pausedBy: null,
        mode: 'live',
      },
    };
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope), {
        msgID: envelope.id,
      });

    const delivery = () =>
      db
        .selectFrom('webhook_deliveries')
        .select(['delivery_id', 'status', 'attempts'])
        .where('partner_id', '=', partnerId)
        .executeTakeFirst();
    await until(async () => (await delivery())?.status === 'delivered');
    const { delivery_id: deliveryId } = (await delivery())!;

    // The tries as kept: the superseded ones as rows, the latest on the delivery's row.
    const tries = (await deliveryAttempts(db, { deliveryId, partnerId, limit: 100 }))!.rows.map(
      ({ attempt, outcome, response_status, latency_ms, error }) => ({
        attempt,
        outcome,
        response_status,
        latency_ms,
        error,
      }),
    );
    expect(tries.map(({ latency_ms: _latency, error: _error, ...rest }) => rest)).toEqual([
      { attempt: 1, outcome: 'failed', response_status: 500 },
      { attempt: 2, outcome: 'failed', response_status: 503 },
      { attempt: 3, outcome: 'delivered', response_status: 204 },
    ]);
    for (const one of tries) expect(one.latency_ms).toBeGreaterThanOrEqual(0);
    expect(tries[0]!.error).toMatch(/500/);
    expect(tries[2]!.error).toBeNull();

    // The partner reads them: the delivery's tries, oldest first, and its last try's latency.
    const listed = await bus.request(
      subjects.ordering.listWebhookDeliveryAttempts,
      { deliveryId },
      context,
    );
    expect(listed).toEqual({
      deliveryId,
      attempts: tries.map((one) => ({
        attempt: one.attempt,
        outcome: one.outcome,
        responseStatus: one.response_status,
        latencyMs: one.latency_ms,
        error: one.error,
        at: expect.any(String),
      })),
      attemptsOmitted: 0,
    });
    const { deliveries } = await bus.request(
      subjects.ordering.listWebhookDeliveries,
      { limit: 20 },
      context,
    );
    expect(deliveries).toEqual([
      expect.objectContaining({
        deliveryId,
        orderId: null,
        storeId,
        status: 'delivered',
        attempts: 3,
        lastResponseStatus: 204,
        lastLatencyMs: tries[2]!.latency_ms,
      }),
    ]);
    // Another partner's delivery is an unknown one.
    await expect(
      bus.request(
        subjects.ordering.listWebhookDeliveryAttempts,
        { deliveryId },
        { ...context, partnerId: randomUUID() },
      ),
    ).rejects.toMatchObject({ code: 'WEBHOOK_DELIVERY_NOT_FOUND' });

    // Each try is told as it is recorded, after its row: the console's cue to read again.
    await until(() => notices.length === 3);
    expect(notices).toEqual(
      [
        ['failed', 500],
        ['failed', 503],
        ['delivered', 204],
      ].map(([status, responseStatus], index) =>
        expect.objectContaining({
          deliveryId,
          orderId: null,
          storeId,
          status,
          attempts: index + 1,
          responseStatus,
        }),
      ),
    );
  });
});
