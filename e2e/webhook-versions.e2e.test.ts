import { createWebhookVerifier } from '@pcp/client';
import { events, LATEST_API_VERSION, webhookPayload } from '@pcp/contracts';
import { setApiVersion } from '@pcp/gateway/admin';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type HttpResult } from './http.js';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * A webhook endpoint's own API version (docs/guide/webhooks.md#api-version), end to end: set on
 * PUT (the body's, else the request's: its PCP-Version, else the pin), what it may subscribe
 * to, and its deliveries rendered in it with `pcp-version`, the sequences going on past an
 * event it does not know.
 */

const OLD = '2026-11-01';
const NEW = '2026-12-01';
const ORDER_KINDS = ['order.created', 'order.status_changed', 'order.cancelled'];
const STORE_KINDS = [
  'store.status_changed',
  'store.hours_changed',
  'store.items_availability_changed',
  'catalog.activated',
];

let env: TestEnvironment;
let platform: TestPlatform;
const receivers: WebhookReceiver[] = [];
type Partner = Awaited<ReturnType<TestPlatform['newPartner']>>;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      // A second between tries: a failing delivery is still open when the test moves on.
      WEBHOOK_RETRY_SCHEDULE_MS: '0,1000,1000,1000,1000,1000',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_POLL_MS: '100',
      // Past the tries the tests make to fail, so the breaker never holds a delivery back.
      WEBHOOK_BREAKER_RESET_MS: '100',
    },
  });
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

/** PUT the endpoint, in `version` (no PCP-Version when undefined). */
const put = (partner: Partner, body: unknown, version?: string) =>
  call(platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', {
    apiKey: partner.apiKey,
    body,
    headers: version === undefined ? {} : { 'pcp-version': version },
  });

const getEndpoint = (partner: Partner, version?: string) =>
  call(platform.baseUrl, 'GET', '/v1/marketfront/webhooks', {
    apiKey: partner.apiKey,
    headers: version === undefined ? {} : { 'pcp-version': version },
  });

const url = 'https://hooks.example/pcp';

/** A ProblemDetail without what differs from one answer to the next. */
const comparable = (answer: HttpResult) => {
  const { requestId: _id, timestamp: _at, instance: _instance, ...rest } = answer.body;
  return { status: answer.status, body: rest };
};

/** Publish a store's status change as stores' outbox does; resolves its event id. */
async function publishStoreStatus(storeId: string, version: number): Promise<string> {
  const envelope = {
    id: randomUUID(),
    type: 'stores.v1.store-changed',
    occurredAt: new Date().toISOString(),
    version,
    data: {
      event: 'store.status_changed',
      storeId,
      status: 'busy',
      reason: null,
      pausedAt: new Date().toISOString(),
      resumeAt: null,
      extraPrepMinutes: 20,
      pausedBy: null,
    },
  };
  await env.nc
    .jetstream()
    .publish(`${env.prefix}.${events.storeChanged.subject}`, JSON.stringify(envelope), {
      msgID: envelope.id,
    });
  return envelope.id;
}

const ofOrder = (orderId: string) => (request: ReceivedWebhook) =>
  request.payload?.data?.orderId === orderId;
const ofStore = (storeId: string) => (request: ReceivedWebhook) =>
  request.payload?.data?.storeId === storeId && request.payload?.data?.orderId === undefined;

const rowsOf = (partnerId: string, storeId: string) =>
  platform.orderingDb
    .selectFrom('webhook_deliveries')
    .select(['version', 'status', 'event_id'])
    .where('partner_id', '=', partnerId)
    .where('store_id', '=', storeId)
    .orderBy('version')
    .execute();

/** Until `check` passes (or the deadline). */
async function eventually(check: () => Promise<void>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('an endpoint’s version on PUT', () => {
  it('is the pin’s without a body version or PCP-Version, and GET shows it', async () => {
    const partner = await platform.newPartner('distribution');
    const created = await put(partner, { url, events: [...ORDER_KINDS, ...STORE_KINDS] });
    expect(created.status, created.text).toBe(201);
    expect(created.body.apiVersion).toBe(LATEST_API_VERSION);
    const read = await getEndpoint(partner);
    expect(read.body.apiVersion).toBe(LATEST_API_VERSION);
  });

  it('is the request’s under PCP-Version 2026-11-01, and a later PUT sets it anew', async () => {
    const partner = await platform.newPartner('distribution');
    const created = await put(partner, { url, events: ['order.created'] }, OLD);
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('pcp-version')).toBe(OLD);
    expect(created.body.apiVersion).toBe(OLD);
    expect((await getEndpoint(partner)).body.apiVersion).toBe(OLD);
    const replaced = await put(partner, { url, events: ['order.created'] });
    expect(replaced.status).toBe(200);
    expect(replaced.body.apiVersion).toBe(NEW);
  });

  it('is the pin’s for a partner pinned to 2026-11-01', async () => {
    const partner = await platform.newPartner('distribution');
    await setApiVersion(platform.gatewayDb, partner.partnerId, OLD);
    const created = await put(partner, { url, events: ['order.created'] });
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('pcp-version')).toBe(OLD);
    expect(created.body.apiVersion).toBe(OLD);
    // A header names the request's version; the body's still wins over both.
    const named = await put(partner, { url, events: ['order.created'] }, NEW);
    expect(named.body.apiVersion).toBe(NEW);
    const chosen = await put(partner, { url, events: ['order.created'], apiVersion: NEW });
    expect(chosen.headers.get('pcp-version')).toBe(OLD);
    expect(chosen.body.apiVersion).toBe(NEW);
  });

  it('is the body’s when it names one, in any request version', async () => {
    const partner = await platform.newPartner('distribution');
    const created = await put(partner, { url, events: ORDER_KINDS, apiVersion: OLD });
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('pcp-version')).toBe(NEW);
    expect(created.body.apiVersion).toBe(OLD);
    const up = await put(partner, { url, events: ORDER_KINDS, apiVersion: NEW }, OLD);
    expect(up.status, up.text).toBe(200);
    expect(up.body.apiVersion).toBe(NEW);
  });

  it('refuses store kinds for a 2026-11-01 endpoint as that version refuses them', async () => {
    const partner = await platform.newPartner('distribution');
    const events = ['order.created', 'store.status_changed'];
    // The old version's own refusal, by the gateway's request translation.
    const underOld = await put(partner, { url, events }, OLD);
    expect(underOld.status, underOld.text).toBe(400);
    // The endpoint's version named in a request of the newest: the same refusal, by ordering.
    const named = await put(partner, { url, events, apiVersion: OLD });
    expect(comparable(named)).toEqual(comparable(underOld));
    expect(named.body).toMatchObject({
      errorCode: 'REQUEST_INVALID',
      errors: [expect.objectContaining({ pointer: '/events/1' })],
    });
    const pinned = await platform.newPartner('distribution');
    await setApiVersion(platform.gatewayDb, pinned.partnerId, OLD);
    expect(comparable(await put(pinned, { url, events }))).toEqual(comparable(underOld));
    // Nothing was registered by any of them.
    expect((await getEndpoint(partner)).status).toBe(404);
    expect((await getEndpoint(pinned)).status).toBe(404);
    // A request of 2026-11-01 reads its body as that version did, whatever endpoint it asks
    // for: store kinds are refused there even for a newest-version endpoint.
    const asked = await put(partner, { url, events, apiVersion: NEW }, OLD);
    expect(comparable(asked)).toEqual(comparable(underOld));
    // And a newest-version endpoint of a newest-version request takes them.
    const newest = await put(partner, { url, events, apiVersion: NEW });
    expect(newest.status, newest.text).toBe(201);
    expect(newest.body.events).toEqual(events);
  });

  it.each([
    ['a number', 20261101],
    ['null', null],
    ['an unknown date', '2026-11-02'],
    ['a date-time', '2026-11-01T00:00:00Z'],
    ['empty', ''],
    ['huge', '2026-11-01'.repeat(10_000)],
    ['an object', { version: OLD }],
  ])('refuses an apiVersion that is %s with 400 at its pointer', async (_case, value) => {
    const partner = await platform.newPartner('distribution');
    const answer = await put(partner, { url, events: ['order.created'], apiVersion: value });
    expect(answer.status, answer.text.slice(0, 500)).toBe(400);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.body.errorCode).toBe('REQUEST_INVALID');
    expect(answer.body.errors).toEqual([expect.objectContaining({ pointer: '/apiVersion' })]);
    expect(answer.text.length).toBeLessThan(2_000);
    expect((await getEndpoint(partner)).status).toBe(404);
  });
});

describe('deliveries in an endpoint’s version', () => {
  it('renders order events in 2026-11-01 with pcp-version, signed over the bytes sent', async () => {
    const oldTarget = await receiver();
    const newTarget = await receiver();
    const old = await platform.newPartner('distribution');
    const current = await platform.newPartner('distribution');
    const oldPut = await put(old, { url: oldTarget.url, events: ORDER_KINDS, apiVersion: OLD });
    const newPut = await put(current, {
      url: newTarget.url,
      events: [...ORDER_KINDS, ...STORE_KINDS],
    });
    expect(oldPut.status).toBe(201);
    expect(newPut.status).toBe(201);

    const storeId = randomUUID();
    const orderId = randomUUID();
    const otherOrderId = randomUUID();
    await publishOrderEvent(env, { partnerId: old.partnerId, orderId, storeId, version: 1 });
    // A store event the old endpoint's version does not know: the newest endpoint gets it.
    const storeEventId = await publishStoreStatus(storeId, 1);
    await publishOrderEvent(env, { partnerId: old.partnerId, orderId, storeId, version: 2 });
    await publishOrderEvent(env, {
      partnerId: current.partnerId,
      orderId: otherOrderId,
      storeId,
      version: 1,
    });

    const oldDeliveries = await oldTarget.waitFor(2, ofOrder(orderId));
    expect(oldDeliveries.map((r) => r.payload.data.version)).toEqual([1, 2]);
    const verifyOld = createWebhookVerifier(oldPut.body.secret);
    for (const delivery of oldDeliveries) {
      expect(delivery.headers['pcp-version']).toBe(OLD);
      const event = verifyOld.verify(delivery.body, delivery.headers);
      // The order event as 2026-11-01 has it (no change of 2026-12-01 touches it).
      expect(webhookPayload.safeParse(event).success).toBe(true);
      expect(event).not.toHaveProperty('data.acceptBy');
    }

    const [newStore] = await newTarget.waitFor(1, ofStore(storeId));
    expect(newStore!.headers['webhook-id']).toBe(storeEventId);
    expect(newStore!.headers['pcp-version']).toBe(NEW);
    expect(newStore!.payload.data.status).toBe('busy');
    createWebhookVerifier(newPut.body.secret).verify(newStore!.body, newStore!.headers);
    const [newOrder] = await newTarget.waitFor(1, ofOrder(otherOrderId));
    expect(newOrder!.headers['pcp-version']).toBe(NEW);

    // The old endpoint got no store event, and has no row for it to list or wait on.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(oldTarget.received.filter(ofStore(storeId))).toEqual([]);
    const storeRows = await platform.orderingDb
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('partner_id', '=', old.partnerId)
      .where('order_id', 'is', null)
      .execute();
    expect(storeRows).toEqual([]);
  }, 30_000);

  it('skips store deliveries left to an endpoint that moved to 2026-11-01, and goes on', async () => {
    const target = await receiver();
    const partner = await platform.newPartner('distribution');
    const created = await put(partner, {
      url: target.url,
      events: [...ORDER_KINDS, ...STORE_KINDS],
    });
    expect(created.status).toBe(201);
    const deliveredStore = randomUUID();
    await publishStoreStatus(deliveredStore, 1);
    const [delivered] = await target.waitFor(1, ofStore(deliveredStore));
    expect(delivered!.headers['pcp-version']).toBe(NEW);

    // Store events the endpoint fails: version 1 retried, versions 2 and 3 waiting behind it.
    const storeId = randomUUID();
    target.answer = (request) => (ofStore(storeId)(request) ? { status: 503 } : { status: 204 });
    for (const version of [1, 2, 3]) await publishStoreStatus(storeId, version);
    await target.waitFor(1, ofStore(storeId));
    await eventually(async () => expect(await rowsOf(partner.partnerId, storeId)).toHaveLength(3));

    // The partner moves its endpoint to 2026-11-01: its order kinds only.
    const moved = await put(partner, { url: target.url, events: ORDER_KINDS, apiVersion: OLD });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.apiVersion).toBe(OLD);
    const triedBefore = target.received.filter(ofStore(storeId)).length;
    // Each open version is settled untried as skipped, in order: none blocks the next.
    await eventually(async () =>
      expect((await rowsOf(partner.partnerId, storeId)).map((row) => row.status)).toEqual([
        'skipped',
        'skipped',
        'skipped',
      ]),
    );
    // At most the try in flight when the endpoint moved; never version 2 or 3.
    expect(target.received.filter(ofStore(storeId)).length).toBeLessThanOrEqual(triedBefore + 1);
    const versionsTried = target.received
      .filter(ofStore(storeId))
      .map((r) => r.payload.data.version);
    expect(new Set(versionsTried)).toEqual(new Set([1]));

    // A resend of a store delivery is not sent in a version without store events either.
    const list = await call(platform.baseUrl, 'GET', '/v1/marketfront/webhooks/deliveries', {
      apiKey: partner.apiKey,
      headers: { 'pcp-version': NEW },
    });
    const listed = list.body.deliveries as { deliveryId: string; storeId: string }[];
    // The skipped ones are not the partner's to list.
    expect(listed.filter((d) => d.storeId === storeId)).toEqual([]);
    const old = listed.find((d) => d.storeId === deliveredStore)!;
    const resent = await call(
      platform.baseUrl,
      'POST',
      `/v1/marketfront/webhooks/deliveries/${old.deliveryId}/resend`,
      { apiKey: partner.apiKey, headers: { 'pcp-version': NEW } },
    );
    expect(resent.status, resent.text).toBe(202);
    await eventually(async () =>
      expect((await rowsOf(partner.partnerId, deliveredStore))[0]!.status).toBe('skipped'),
    );
    expect(target.received.filter(ofStore(deliveredStore))).toHaveLength(1);

    // Later deliveries go on, in the endpoint's version.
    const orderId = randomUUID();
    await publishOrderEvent(env, { partnerId: partner.partnerId, orderId, storeId, version: 1 });
    const [order] = await target.waitFor(1, ofOrder(orderId));
    expect(order!.headers['pcp-version']).toBe(OLD);
    createWebhookVerifier(created.body.secret).verify(order!.body, order!.headers);
  }, 40_000);
});
