import { createPlatformClient, createWebhookVerifier, type PlatformClient } from '@pcp/client';
import { events, storeWebhookPayload, type StoreEventData } from '@pcp/contracts';
import { keyringFromEnv, seal } from '@pcp/service-kit';
import { sql } from 'kysely';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call } from './http.js';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * Store events as webhooks (docs/guide/webhooks.md#store-events), end to end: store events
 * published on the real JetStream as stores' outbox does, fanned out by ordering's recorder to
 * every distribution partner subscribed, delivered to receivers on loopback in order per
 * store, while a hanging partner holds only its own slots and order events go first.
 */

const STORE_DURABLE = 'ordering-store-webhook-deliveries';
const orderingEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWLIST: '127.0.0.1/32',
  WEBHOOK_RETRY_SCHEDULE_MS: '0,300,600,600,600,600',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_BREAKER_RESET_MS: '1000',
  WEBHOOK_CONCURRENCY: '8',
  // Three store-event slots: the hanging partner's store deliveries can fill two of them (its
  // per-partner cap), never the order events' slots, and the third is the other partners'.
  WEBHOOK_STORE_EVENT_CONCURRENCY: '3',
  WEBHOOK_MAX_IN_FLIGHT_PER_PARTNER: '2',
};

const STORE_KINDS = [
  'store.status_changed',
  'store.hours_changed',
  'store.items_availability_changed',
  'catalog.activated',
] as const;
type StoreKind = (typeof STORE_KINDS)[number];

let env: TestEnvironment;
let platform: TestPlatform;
const receivers: WebhookReceiver[] = [];

type Partner = { partnerId: string; client: PlatformClient; apiKey: string; secret: string };

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, { orderingEnv });
});

afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await platform?.stop();
  await env?.cleanup();
});

async function receiver(): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver();
  receivers.push(started);
  return started;
}

/** A distribution partner whose endpoint is `target`, for `kinds`. */
async function subscribed(
  target: WebhookReceiver,
  kinds: readonly string[] = [...STORE_KINDS, 'order.created', 'order.status_changed'],
): Promise<Partner> {
  const partner = await platform.newPartner('distribution');
  const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
  const put = await client.PUT('/v1/marketfront/webhooks', {
    // The typed client knows the kinds; the test passes them as the partner would.
    body: { url: target.url, events: kinds as never },
  });
  expect(put.response.status).toBe(201);
  return { ...partner, client, secret: put.data!.secret! };
}

/** What each kind's event says, for `storeId`. */
function dataOf(kind: StoreKind, storeId: string): StoreEventData {
  switch (kind) {
    case 'store.status_changed':
      return {
        event: kind,
        storeId,
        status: 'busy',
        reason: null,
        pausedAt: '2026-11-22T18:05:00.000Z',
        resumeAt: null,
        extraPrepMinutes: 20,
        pausedBy: null,
      };
    case 'store.hours_changed':
      return {
        event: kind,
        storeId,
        timezone: 'America/Chicago',
        availability: [],
        specialDays: [{ date: '2026-12-25', closed: true }],
      };
    case 'store.items_availability_changed':
      return {
        event: kind,
        storeId,
        itemAvailabilityVersion: 3,
        items: [{ itemId: randomUUID(), available: false, until: '2026-11-23T06:00:00.000Z' }],
      };
    case 'catalog.activated':
      return {
        event: kind,
        storeId,
        catalogSetId: randomUUID(),
        etag: '"v2"',
        activatedAt: '2026-11-22T18:00:00.000Z',
      };
  }
}

/** Publish a store event as stores' outbox does; resolves its envelope. */
async function publishStoreEvent(storeId: string, version: number, kind: StoreKind) {
  const envelope = {
    id: randomUUID(),
    type: 'stores.v1.store-changed',
    occurredAt: new Date().toISOString(),
    version,
    data: dataOf(kind, storeId),
  };
  await env.nc
    .jetstream()
    .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope), {
      msgID: envelope.id,
    });
  return envelope;
}

const ofStore = (storeId: string) => (request: ReceivedWebhook) =>
  request.payload?.data?.storeId === storeId && request.payload?.data?.orderId === undefined;
const storeVersions = (target: WebhookReceiver, storeId: string) =>
  target.received.filter(ofStore(storeId)).map((r) => r.payload.data.version as number);

/** The store-event recorder's messages by outcome. */
async function recorderCount(outcome: string): Promise<number> {
  const metric = platform.metrics
    .get('ordering')!
    .registry.getSingleMetric('pcp_consumer_messages_total');
  const { values } = await metric!.get();
  return values
    .filter((v) => v.labels.consumer === STORE_DURABLE && v.labels.outcome === outcome)
    .reduce((sum, v) => sum + v.value, 0);
}

describe('store events fanned out to subscribed partners', () => {
  it('delivers in order per store to the steady partner while another hangs, order events first', async () => {
    const steady = await receiver();
    const hanging = await receiver();
    hanging.answer = () => 'hang';
    const a = await subscribed(steady);
    await subscribed(hanging);
    const storeId = randomUUID();
    const kinds: StoreKind[] = [
      'store.status_changed',
      'catalog.activated',
      'store.items_availability_changed',
      'store.hours_changed',
      'store.status_changed',
      'catalog.activated',
    ];
    const publishedAt = Date.now();
    for (const [index, kind] of kinds.entries()) await publishStoreEvent(storeId, index + 1, kind);
    // The hanging partner's tries take every store-event slot it may; order events still go.
    await hanging.waitFor(1, ofStore(storeId));
    const orderId = randomUUID();
    const sentAt = Date.now();
    await publishOrderEvent(env, { partnerId: a.partnerId, orderId, storeId, version: 1 });
    const [order] = await steady.waitFor(1, (r) => r.payload?.data?.orderId === orderId, 5_000);
    // Not behind the hanging partner's one-second tries.
    expect(order!.at - sentAt).toBeLessThan(900);

    const delivered = await steady.waitFor(kinds.length, ofStore(storeId), 20_000);
    expect(storeVersions(steady, storeId)).toEqual([1, 2, 3, 4, 5, 6]);
    // Not held back by the hanging partner's tries (a second each, then retried).
    expect(delivered.at(-1)!.at - publishedAt).toBeLessThan(3_000);
    // Each delivery is the store event as the contract has it, signed like order events.
    const verify = createWebhookVerifier(a.secret);
    for (const request of steady.received.filter(ofStore(storeId))) {
      const event = verify.verify(request.body, request.headers);
      expect(storeWebhookPayload.safeParse(event).success).toBe(true);
    }
    expect(steady.received.filter(ofStore(storeId)).map((r) => r.payload.type)).toEqual(kinds);
    // The hanging partner got no further than its slots: it is tried again, never past v1.
    expect(new Set(storeVersions(hanging, storeId))).toEqual(new Set([1]));
  }, 60_000);

  it('keeps a store in order through a failed try: the next version waits for the retry', async () => {
    const target = await receiver();
    const storeId = randomUUID();
    let failedOnce = false;
    target.answer = (request) => {
      if (ofStore(storeId)(request) && request.payload.data.version === 2 && !failedOnce) {
        failedOnce = true;
        return { status: 503 };
      }
      return { status: 204 };
    };
    await subscribed(target, STORE_KINDS);
    for (const version of [1, 2, 3, 4]) {
      await publishStoreEvent(storeId, version, 'store.status_changed');
    }
    await target.waitFor(5, ofStore(storeId), 15_000);
    expect(storeVersions(target, storeId)).toEqual([1, 2, 2, 3, 4]);
  }, 30_000);

  it('records a version that arrived first only behind the one before it', async () => {
    const target = await receiver();
    await subscribed(target, STORE_KINDS);
    const storeId = randomUUID();
    await publishStoreEvent(storeId, 2, 'catalog.activated');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(storeVersions(target, storeId)).toEqual([]);
    await publishStoreEvent(storeId, 1, 'store.status_changed');
    await target.waitFor(2, ofStore(storeId));
    expect(storeVersions(target, storeId)).toEqual([1, 2]);
  }, 20_000);

  it('sends only the kinds a partner subscribed to, without waiting on the others', async () => {
    const statusOnly = await receiver();
    const everything = await receiver();
    const narrow = await subscribed(statusOnly, ['store.status_changed']);
    await subscribed(everything, STORE_KINDS);
    const storeId = randomUUID();
    const kinds: StoreKind[] = [
      'store.status_changed',
      'store.hours_changed',
      'store.status_changed',
    ];
    const sentAt = Date.now();
    for (const [index, kind] of kinds.entries()) await publishStoreEvent(storeId, index + 1, kind);
    await statusOnly.waitFor(2, ofStore(storeId), 5_000);
    // Version 3 did not wait for a row of version 2 the partner never had (the gap grace).
    expect(Date.now() - sentAt).toBeLessThan(5_000);
    expect(storeVersions(statusOnly, storeId)).toEqual([1, 3]);
    await everything.waitFor(3, ofStore(storeId));
    expect(storeVersions(everything, storeId)).toEqual([1, 2, 3]);
    // No rows at all for kinds the partner does not take: nothing skipped to list or keep.
    const rows = await platform.orderingDb
      .selectFrom('webhook_deliveries')
      .select(['version', 'status'])
      .where('partner_id', '=', narrow.partnerId)
      .where('store_id', '=', storeId)
      .orderBy('version')
      .execute();
    expect(rows.map((row) => row.version)).toEqual([1, 3]);
  }, 20_000);

  it('records a redelivered event once and lists store deliveries with their store', async () => {
    const target = await receiver();
    const partner = await subscribed(target, STORE_KINDS);
    const storeId = randomUUID();
    const envelope = await publishStoreEvent(storeId, 1, 'store.items_availability_changed');
    // The same event again past the stream's publish dedupe, as a redelivery would bring it.
    await env.nc
      .jetstream()
      .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope));
    await target.waitFor(1, ofStore(storeId));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(storeVersions(target, storeId)).toEqual([1]);
    expect(target.received.filter(ofStore(storeId))[0]!.headers['webhook-id']).toBe(envelope.id);

    const list = await partner.client.GET('/v1/marketfront/webhooks/deliveries', {
      params: { query: { limit: 5 } },
    });
    expect(list.response.status).toBe(200);
    const delivery = list.data!.deliveries.find((d) => d.eventId === envelope.id)!;
    expect(delivery).toMatchObject({
      type: 'store.items_availability_changed',
      orderId: null,
      storeId,
      version: 1,
      status: 'delivered',
    });
    const resent = await partner.client.POST(
      '/v1/marketfront/webhooks/deliveries/{deliveryId}/resend',
      { params: { path: { deliveryId: delivery.deliveryId } } },
    );
    expect(resent.response.status).toBe(202);
    expect(resent.data).toMatchObject({ orderId: null, storeId, status: 'pending' });
    await target.waitFor(2, ofStore(storeId));
    expect(target.received.filter(ofStore(storeId))[1]!.body).toBe(
      target.received.filter(ofStore(storeId))[0]!.body,
    );
  }, 20_000);

  it('fans one event out to many partners in bounded batches, each once', async () => {
    const target = await receiver();
    const storeId = randomUUID();
    const partners: string[] = [];
    // More partners than one statement takes (FAN_OUT_BATCH is 500) would be slow to register
    // through the gateway; rows are seeded straight into the endpoints table instead, each
    // with a secret sealed for its own row (the platform's keyring: the local one).
    const keyring = keyringFromEnv({});
    const values = Array.from({ length: 1_100 }, () => {
      const partnerId = randomUUID();
      partners.push(partnerId);
      const binding = {
        service: 'ordering',
        table: 'webhook_endpoints',
        tenant: partnerId,
        row: partnerId,
        mode: 'live',
      } as const;
      const secret = seal(keyring, binding, `whsec_${randomBytes(24).toString('base64')}`);
      return { partner_id: partnerId, url: target.url, events: ['catalog.activated'], secret };
    });
    await platform.orderingDb.insertInto('webhook_endpoints').values(values).execute();
    const orderTarget = await receiver();
    const orderPartner = await subscribed(orderTarget, ['order.created']);
    const envelope = await publishStoreEvent(storeId, 1, 'catalog.activated');
    // An order event behind 1,100 due store deliveries is claimed before them.
    await target.waitFor(10, ofStore(storeId), 10_000);
    const orderId = randomUUID();
    const sentAt = Date.now();
    await publishOrderEvent(env, {
      partnerId: orderPartner.partnerId,
      orderId,
      storeId: randomUUID(),
      version: 1,
    });
    const [order] = await orderTarget.waitFor(1, (r) => r.payload?.data?.orderId === orderId);
    expect(order!.at - sentAt).toBeLessThan(900);
    expect(target.received.filter(ofStore(storeId)).length).toBeLessThan(partners.length);
    await target.waitFor(partners.length, ofStore(storeId), 60_000);
    const rows = await platform.orderingDb
      .selectFrom('webhook_deliveries')
      .select(sql<number>`count(*)::int`.as('rows'))
      .select(sql<number>`count(distinct partner_id)::int`.as('partners'))
      .where('event_id', '=', envelope.id)
      .executeTakeFirstOrThrow();
    // Every partner subscribed to the kind, these and the earlier tests', once each.
    const subscribers = await platform.orderingDb
      .selectFrom('webhook_endpoints')
      .select(sql<number>`count(*)::int`.as('count'))
      .where(sql<boolean>`'catalog.activated' = any(events) and disabled_at is null`)
      .executeTakeFirstOrThrow();
    expect(subscribers.count).toBeGreaterThan(1_100);
    expect(rows).toEqual({ rows: subscribers.count, partners: subscribers.count });
    await platform.orderingDb
      .updateTable('webhook_endpoints')
      .set({ disabled_at: sql<Date>`now()` })
      .where('partner_id', 'in', partners)
      .execute();
  }, 90_000);
});

describe('hostile store events on the stream', () => {
  it('dead-letters what is not a store event, and keeps going', async () => {
    const target = await receiver();
    await subscribed(target, STORE_KINDS);
    const before = await recorderCount('dead_lettered');
    const storeId = randomUUID();
    const subject = `${env.prefix}.${events.storeChanged.subject}`;
    const js = env.nc.jetstream();
    await js.publish(subject, 'not json at all');
    await js.publish(
      subject,
      JSON.stringify({
        id: randomUUID(),
        type: 'stores.v1.store-changed',
        occurredAt: new Date().toISOString(),
        version: 1,
        data: { event: 'store.exploded', storeId },
      }),
    );
    await js.publish(
      subject,
      JSON.stringify({
        id: randomUUID(),
        type: 'stores.v1.store-changed',
        occurredAt: new Date().toISOString(),
        version: -4,
        data: dataOf('store.status_changed', storeId),
      }),
    );
    await publishStoreEvent(storeId, 1, 'store.status_changed');
    await target.waitFor(1, ofStore(storeId));
    // Another event claiming the version already recorded.
    await publishStoreEvent(storeId, 1, 'catalog.activated');
    for (let waited = 0; waited < 50; waited++) {
      if ((await recorderCount('dead_lettered')) >= before + 4) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await recorderCount('dead_lettered')).toBe(before + 4);
    expect(storeVersions(target, storeId)).toEqual([1]);
  }, 20_000);

  it('refuses an unknown event kind in an endpoint registration', async () => {
    const partner = await platform.newPartner('distribution');
    const target = await receiver();
    const response = await call(platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', {
      apiKey: partner.apiKey,
      body: { url: target.url, events: ['store.status_changed', 'store.exploded'] },
    });
    expect(response.status).toBe(400);
  });
});
