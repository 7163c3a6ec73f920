import { events, subjects, webhookStreamWake, type WebhookStreamEvent } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  loadConfig,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '../../src/app.js';
import { pruneStreamEvents } from '../../src/webhooks/stream.repository.js';

// The test-mode webhook stream log (docs/guide/sandbox.md#webhook-stream) on the real
// servers: events reach the recorders through the real JetStream, as ordering's and stores'
// outboxes publish them.
const KEEP = 10;

let env: TestEnvironment;
let db: Kysely<OrderingDatabase>;
let bus: BusClient;
let ordering: ReturnType<typeof createOrderingService>;

const tenantCtx = (partnerId: string, mode: 'test' | 'live' = 'test'): RequestContext => ({
  requestId: randomUUID(),
  partnerId,
  partnerKind: 'distribution',
  mode,
});

beforeAll(async () => {
  env = await createTestEnvironment();
  bus = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 5_000, logger: env.logger });
  db = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-webhook-stream',
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
      WEBHOOK_STREAM_MAX_EVENTS: String(KEEP),
    }),
  });
  await ordering.start();
});

afterAll(async () => {
  await ordering?.stop(5_000);
  await db?.destroy();
  await env?.cleanup();
});

/** Publish version `version` of an order's status change for `partnerId`; its event id. */
async function publishOrderEvent(partnerId: string, orderId: string, version: number) {
  const id = randomUUID();
  const envelope = {
    id,
    type: 'ordering.v1.order-status-changed',
    occurredAt: new Date().toISOString(),
    version,
    data: {
      event: version === 1 ? 'order.created' : 'order.status_changed',
      orderId,
      storeId: randomUUID(),
      partnerId,
      state: 'open',
      status: version === 1 ? 'pending' : 'confirmed',
      previousStatus: version === 1 ? null : 'pending',
    },
  };
  await env.nc
    .jetstream()
    .publish(`${env.prefix}.${events.orderStatusChanged.subject}`, JSON.stringify(envelope), {
      msgID: id,
    });
  return id;
}

/** An order event is recorded (its delivery row exists): the recorder is past it. */
async function recorded(eventId: string) {
  await expect
    .poll(
      async () =>
        (
          await db
            .selectFrom('webhook_deliveries')
            .select('delivery_id')
            .where('event_id', '=', eventId)
            .execute()
        ).length,
      { timeout: 5_000 },
    )
    .toBeGreaterThan(0);
}

/**
 * Publish an order event and wait until it is recorded: the recorder takes events several at
 * a time, and the log is in the order they are recorded.
 */
async function recordEvent(partnerId: string, orderId: string, version: number) {
  const id = await publishOrderEvent(partnerId, orderId, version);
  await recorded(id);
  return id;
}

/** Publish status change version 1 of a test store (only test tenants get it); its event id. */
async function publishTestStoreEvent(storeId: string) {
  const id = randomUUID();
  const envelope = {
    id,
    type: 'stores.v1.store-changed',
    occurredAt: new Date().toISOString(),
    version: 1,
    data: {
      event: 'store.status_changed',
      storeId,
      status: 'busy',
      reason: null,
      pausedAt: new Date().toISOString(),
      resumeAt: null,
      extraPrepMinutes: 15,
      pausedBy: null,
      mode: 'test',
    },
  };
  await env.nc
    .jetstream()
    .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope), {
      msgID: id,
    });
  return id;
}

const read = (partnerId: string, after?: number, limit = 100) =>
  bus.request(
    subjects.ordering.readWebhookStream,
    after === undefined ? { limit } : { after, limit },
    tenantCtx(partnerId),
  );

async function readAll(partnerId: string): Promise<WebhookStreamEvent[]> {
  return (await read(partnerId)).events;
}

describe('the webhook stream log', () => {
  it('is only for test keys of distribution partners', async () => {
    const partnerId = randomUUID();
    await expectAppError(
      bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId, 'live')),
      'FORBIDDEN',
    );
    await expectAppError(
      bus.request(subjects.ordering.readWebhookStream, { limit: 10 }, tenantCtx(partnerId, 'live')),
      'FORBIDDEN',
    );
  });

  it("gives the endpoint's signing secret once the tenant has an endpoint, the stream's before", async () => {
    const partnerId = randomUUID();
    const before = await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    const put = await bus.request(
      subjects.ordering.putWebhook,
      { url: 'https://hooks.example.com/pcp', events: ['order.created'] },
      tenantCtx(partnerId),
    );
    const endpointSecret = put.endpoint.secret;
    expect(endpointSecret).toMatch(/^whsec_/);
    expect(endpointSecret).not.toBe(before.secret);
    const after = await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    expect(after.secret).toBe(endpointSecret);
  });

  it('keeps the events recorded after the stream was opened, in the order recorded, as deliveries carry them', async () => {
    const partnerId = randomUUID();
    const orderId = randomUUID();
    await recordEvent(partnerId, orderId, 1);

    const opened = await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    expect(opened.secret).toMatch(/^whsec_/);
    // Opening again keeps the secret (another listener of the same tenant).
    const again = await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    expect(again.secret).toBe(opened.secret);
    const stored = await db
      .selectFrom('webhook_streams')
      .select('secret')
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow();
    expect(stored.secret).not.toContain(opened.secret.slice('whsec_'.length));

    const wakes: string[] = [];
    const subscription = env.nc.subscribe(`${env.prefix}.${webhookStreamWake.subject(partnerId)}`, {
      callback: (_error, msg) => wakes.push(msg.subject),
    });
    const ids = [
      await recordEvent(partnerId, orderId, 2),
      await recordEvent(partnerId, orderId, 3),
    ];
    // Another tenant's events are not in this log.
    await recordEvent(randomUUID(), randomUUID(), 1);
    await expect.poll(() => wakes.length, { timeout: 5_000 }).toBe(2);
    subscription.unsubscribe();

    const log = await readAll(partnerId);
    expect(log.map((event) => event.webhookId)).toEqual(ids);
    expect(log.map((event) => event.type)).toEqual([
      'order.status_changed',
      'order.status_changed',
    ]);
    const delivery = await db
      .selectFrom('webhook_deliveries')
      .select('payload')
      .where('event_id', '=', ids[0]!)
      .executeTakeFirstOrThrow();
    expect(log[0]!.body).toBe(delivery.payload);
    expect(JSON.parse(log[0]!.body)).toMatchObject({
      type: 'order.status_changed',
      data: { orderId, version: 2 },
    });
    expect(log[1]!.seq).toBeGreaterThan(log[0]!.seq);

    // Strictly after a sequence number; a redelivered event adds nothing.
    expect((await read(partnerId, log[0]!.seq)).events.map((event) => event.webhookId)).toEqual([
      ids[1],
    ]);
    expect((await read(partnerId, log[1]!.seq)).events).toEqual([]);
    expect((await read(partnerId, undefined, 1)).events.map((event) => event.seq)).toEqual([
      log[0]!.seq,
    ]);
  });

  it('keeps the newest events of each tenant, and none past the retention', async () => {
    const partnerId = randomUUID();
    await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    const orderId = randomUUID();
    const ids: string[] = [];
    for (let version = 1; version <= KEEP + 5; version++) {
      ids.push(await recordEvent(partnerId, orderId, version));
    }
    const log = await readAll(partnerId);
    expect(log.map((event) => event.webhookId)).toEqual(ids.slice(-KEEP));

    await sql`update webhook_stream_events set created_at = now() - interval '2 hours'
               where partner_id = ${partnerId} and webhook_id = any(${ids.slice(0, -3)})`.execute(
      db,
    );
    await pruneStreamEvents(db, 3_600_000);
    expect((await readAll(partnerId)).map((event) => event.webhookId)).toEqual(ids.slice(-3));
  });

  it('gives each event in the tenant’s endpoint’s version, without the kinds it does not know', async () => {
    const partnerId = randomUUID();
    await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    // Without an endpoint: the request's version (the newest here).
    const orderId = randomUUID();
    await recordEvent(partnerId, orderId, 1);
    expect((await readAll(partnerId)).map((event) => event.apiVersion)).toEqual(['2026-12-01']);

    await bus.request(
      subjects.ordering.putWebhook,
      { url: 'http://127.0.0.1:9/hooks', events: ['order.status_changed', 'store.status_changed'] },
      tenantCtx(partnerId),
    );
    const storeEventId = await publishTestStoreEvent(randomUUID());
    await expect.poll(async () => (await readAll(partnerId)).length, { timeout: 5_000 }).toBe(2);
    // The endpoint moves to 2026-11-01: the store event in the log is not its any more.
    await bus.request(
      subjects.ordering.putWebhook,
      {
        url: 'http://127.0.0.1:9/hooks',
        events: ['order.status_changed'],
        apiVersion: '2026-11-01',
      },
      tenantCtx(partnerId),
    );
    const later = await recordEvent(partnerId, orderId, 2);
    const log = await readAll(partnerId);
    expect(log.map((event) => event.webhookId)).not.toContain(storeEventId);
    expect(log.map((event) => [event.type, event.apiVersion])).toEqual([
      ['order.created', '2026-11-01'],
      ['order.status_changed', '2026-11-01'],
    ]);
    // A read past the first event gets the next it may have, not a page emptied of the other.
    const [next] = (await read(partnerId, log[0]!.seq, 1)).events;
    expect(next!.webhookId).toBe(later);
  });

  it('keeps the store events the tenant receives', async () => {
    const partnerId = randomUUID();
    await bus.request(subjects.ordering.openWebhookStream, {}, tenantCtx(partnerId));
    await bus.request(
      subjects.ordering.putWebhook,
      { url: 'http://127.0.0.1:9/hooks', events: ['store.status_changed'] },
      tenantCtx(partnerId),
    );
    const storeId = randomUUID();
    const id = randomUUID();
    const envelope = {
      id,
      type: 'stores.v1.store-changed',
      occurredAt: new Date().toISOString(),
      version: 1,
      data: {
        event: 'store.status_changed',
        storeId,
        status: 'paused',
        reason: 'test',
        pausedAt: new Date().toISOString(),
        resumeAt: null,
        extraPrepMinutes: null,
        pausedBy: 'partner',
        // A test store's event: only test tenants' endpoints (and streams) get it.
        mode: 'test',
      },
    };
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope), {
        msgID: id,
      });
    await expect.poll(async () => (await readAll(partnerId)).length, { timeout: 5_000 }).toBe(1);
    const [event] = await readAll(partnerId);
    expect(event).toMatchObject({ webhookId: id, type: 'store.status_changed' });
    expect(JSON.parse(event!.body)).toMatchObject({
      type: 'store.status_changed',
      data: { storeId, status: 'paused', version: 1 },
    });
  });
});
