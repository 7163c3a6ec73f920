import {
  createPlatformClient,
  createWebhookVerifier,
  WebhookVerificationError,
  type PlatformClient,
  type ProblemDetail,
} from '@pcp/client';
import { webhookPayload } from '@pcp/contracts';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call, type HttpResult } from './http.js';
import { seedPlacedOrder } from './seed-order.js';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * Order-status webhooks end to end: registration through the gateway with the typed client
 * (`@pcp/client`), order events on the real JetStream (from real status changes, and
 * published directly where a test needs exact versions), deliveries to receivers on loopback
 * verified with the client's verifier as a partner would. Requests the types forbid
 * (malformed and hostile bodies and queries) go raw.
 */

type Partner = { partnerId: string; apiKey: string; client: PlatformClient };
type WebhookEventKind = 'order.created' | 'order.status_changed' | 'order.cancelled';

const RETRY_SCHEDULE_MS = [0, 300, 600];
const orderingEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWLIST: '127.0.0.1/32',
  WEBHOOK_RETRY_SCHEDULE_MS: RETRY_SCHEDULE_MS.join(','),
  WEBHOOK_TIMEOUT_MS: '700',
  WEBHOOK_POLL_MS: '100',
  // A partner failing this test's few tries must not trip its breaker (its own test does).
  WEBHOOK_BREAKER_RESET_MS: '1000',
};

let env: TestEnvironment;
let platform: TestPlatform;
let commerce: Partner;
let storeId: string;
const receivers: WebhookReceiver[] = [];

async function newPartner(kind: 'commerce' | 'distribution'): Promise<Partner> {
  const partner = await platform.newPartner(kind);
  return {
    ...partner,
    client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
  };
}

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    orderingEnv,
  });
  commerce = await newPartner('commerce');
  storeId = randomUUID();
  const created = await commerce.client.PUT('/v1/commerce/stores/{storeId}', {
    params: { path: { storeId } },
    body: storeProfile(),
  });
  expect(created.response.status).toBe(201);
});

afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await platform?.stop();
  await env?.cleanup();
});

async function receiver(): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver();
  receivers.push(started);
  return started;
}

const ALL_EVENTS: WebhookEventKind[] = ['order.created', 'order.status_changed', 'order.cancelled'];

const putWebhook = (partner: Partner, body: { url: string; events: WebhookEventKind[] }) =>
  partner.client.PUT('/v1/marketfront/webhooks', { body });

/** A PUT of a body the types forbid. */
const putRawWebhook = (partner: Partner, options: { body?: unknown; rawBody?: string }) =>
  call(platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', { apiKey: partner.apiKey, ...options });

const getWebhook = (partner: Partner) => partner.client.GET('/v1/marketfront/webhooks');

/** A distribution partner with an endpoint at `target` for every event; its secret. */
async function subscribedPartner(target: WebhookReceiver, events = ALL_EVENTS) {
  const partner = await newPartner('distribution');
  const put = await putWebhook(partner, { url: target.url, events });
  expect(put.response.status, JSON.stringify(put.error)).toBe(201);
  return { partner, secret: put.data!.secret! };
}

type DeliveryQuery = { status?: 'failed' | 'dead'; limit?: number; cursor?: string };

/** The partner's delivery log (a page of it); throws when it is refused. */
async function deliveries(partner: Partner, query: DeliveryQuery = {}) {
  const answer = await partner.client.GET('/v1/marketfront/webhooks/deliveries', {
    params: { query },
  });
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(200);
  return answer.data!;
}

const resend = (partner: Partner, deliveryId: string) =>
  partner.client.POST('/v1/marketfront/webhooks/deliveries/{deliveryId}/resend', {
    params: { path: { deliveryId } },
  });

/** Publish versions of an order's events for `partner`, in order; resolves their ids. */
async function publishOrderEvents(
  partner: Partner,
  orderId: string,
  versions: number[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const version of versions) {
    ids.push(
      await publishOrderEvent(env, { partnerId: partner.partnerId, orderId, storeId, version }),
    );
  }
  return ids;
}

const versionOf = (request: ReceivedWebhook) => request.payload?.data?.version as number;

/** A typed answer's ProblemDetail, checked for its status and code. */
function expectProblem(
  answer: { response: Response; error?: unknown },
  status: number,
  errorCode: string,
): ProblemDetail {
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(status);
  expect(answer.error).toMatchObject({ status, errorCode });
  return answer.error as ProblemDetail;
}

/** The same for a raw answer. */
function expectRawProblem(result: HttpResult, status: number, errorCode: string): ProblemDetail {
  expect(result.status, result.text).toBe(status);
  expect(result.body).toMatchObject({ status, errorCode });
  return result.body as ProblemDetail;
}

describe('registering an endpoint', () => {
  it('shows the whsec_ secret once, replaces the endpoint, and never shows the secret on GET', async () => {
    const target = await receiver();
    const partner = await newPartner('distribution');
    expectProblem(await getWebhook(partner), 404, 'WEBHOOK_NOT_FOUND');

    const created = await putWebhook(partner, { url: target.url, events: ['order.created'] });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({
      url: target.url,
      events: ['order.created'],
      status: 'active',
      disabledReason: null,
      previousSecretExpiresAt: null,
    });
    const secret = created.data!.secret!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const replaced = await putWebhook(partner, { url: `${target.url}/v2`, events: ALL_EVENTS });
    expect(replaced.response.status).toBe(200);
    expect(replaced.data).toMatchObject({
      url: `${target.url}/v2`,
      events: ALL_EVENTS,
      secret: null,
    });

    const shown = await getWebhook(partner);
    expect(shown.response.status).toBe(200);
    expect(shown.data).not.toHaveProperty('secret');
    expect(JSON.stringify(shown.data)).not.toContain(secret);
    expect(shown.data).toMatchObject({ url: `${target.url}/v2`, status: 'active' });
  });

  it('refuses malformed, oversized and hostile bodies with pointers, and commerce partners', async () => {
    const partner = await newPartner('distribution');
    const url = 'https://hooks.example.com/pcp';
    const cases: [string, unknown, string][] = [
      ['no url', { events: ALL_EVENTS }, '/url'],
      ['not a URL', { url: 'hooks', events: ALL_EVENTS }, '/url'],
      ['another scheme', { url: 'ftp://hooks.example.com/', events: ALL_EVENTS }, '/url'],
      ['a javascript URL', { url: 'javascript:alert(1)', events: ALL_EVENTS }, '/url'],
      [
        'a huge URL',
        { url: `https://example.com/${'a'.repeat(3000)}`, events: ALL_EVENTS },
        '/url',
      ],
      ['no events', { url, events: [] }, '/events'],
      ['an unknown event', { url, events: ['order.exploded'] }, '/events/0'],
      ['an event twice', { url, events: ['order.created', 'order.created'] }, '/events'],
      ['events not a list', { url, events: 'order.created' }, '/events'],
      ['an unknown field', { url, events: ALL_EVENTS, secret: 'whsec_mine' }, ''],
    ];
    for (const [name, body, pointer] of cases) {
      const problem = expectRawProblem(
        await putRawWebhook(partner, { body }),
        400,
        'REQUEST_INVALID',
      );
      const pointers = (problem.errors ?? []).map((error) => error.pointer);
      expect(pointers, name).toContain(pointer);
    }
    for (const raw of ['{"url": ', '[]', 'null', '{"__proto__": {"url": "https://x.example"}}']) {
      expectRawProblem(await putRawWebhook(partner, { rawBody: raw }), 400, 'REQUEST_INVALID');
    }
    const huge = await putRawWebhook(partner, {
      body: { url, events: ALL_EVENTS, pad: 'x'.repeat(2_000_000) },
    });
    expect(huge.status).toBe(413);
    expectProblem(await putWebhook(commerce, { url, events: ALL_EVENTS }), 403, 'FORBIDDEN');
    // Nothing was registered by any of them.
    expectProblem(await getWebhook(partner), 404, 'WEBHOOK_NOT_FOUND');
  });
});

describe('deliveries of real order changes', () => {
  it('delivers every change of a placed order in order, signed per Standard Webhooks', async () => {
    const target = await receiver();
    const { partner, secret } = await subscribedPartner(target);
    const orderId = await seedPlacedOrder(platform.orderingDb, env.prefix, {
      store: storeId,
      storePartner: commerce,
      placer: partner,
    });
    // The seeded order's event waits for the outbox relay's tick; the moves nudge it.
    for (const body of [
      { status: 'confirmed' },
      { status: 'preparing' },
      { status: 'ready' },
      { state: 'completed' },
    ] as const) {
      const moved = await commerce.client.POST('/v1/commerce/orders/{orderId}/status', {
        params: { path: { orderId } },
        body,
      });
      expect(moved.response.status, JSON.stringify(moved.error)).toBe(200);
    }
    const got = await target.waitFor(5);
    expect(got.map(versionOf)).toEqual([1, 2, 3, 4, 5]);
    expect(got.map((request) => request.payload.type)).toEqual([
      'order.created',
      'order.status_changed',
      'order.status_changed',
      'order.status_changed',
      'order.status_changed',
    ]);
    expect(got.map((request) => request.payload.data.status)).toEqual([
      'pending',
      'confirmed',
      'preparing',
      'ready',
      'completed',
    ]);
    expect(got[1]!.payload.data.previousStatus).toBe('pending');
    const verifier = createWebhookVerifier(secret);
    for (const request of got) {
      expect(webhookPayload.safeParse(request.payload).error).toBeUndefined();
      expect(request.payload.data).toMatchObject({ orderId, storeId });
      expect(request.headers['content-type']).toBe('application/json');
      // What a partner does: the verifier checks the id, timestamp and HMAC over the body.
      expect(verifier.verify(request.body, request.headers)).toEqual(request.payload);
      expect(() => verifier.verify(`${request.body} `, request.headers)).toThrow(
        WebhookVerificationError,
      );
    }
    expect(new Set(got.map((request) => request.headers['webhook-id'])).size).toBe(5);
    // The receiver has each delivery before its outcome is settled in the log.
    await expect
      .poll(async () => (await deliveries(partner)).deliveries, { timeout: 10_000 })
      .toSatisfy(
        (logged: { status: string }[]) =>
          logged.length === 5 && logged.every((delivery) => delivery.status === 'delivered'),
      );
    const log = await deliveries(partner);
    expect(log.deliveries[0]).toMatchObject({
      orderId,
      status: 'delivered',
      attempts: 1,
      lastResponseStatus: 204,
    });
  });

  it('delivers only the event kinds the endpoint asked for', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target, ['order.status_changed']);
    const orderId = randomUUID();
    await publishOrderEvents(partner, orderId, [1, 2, 3]);
    const got = await target.waitFor(2);
    expect(got.map(versionOf)).toEqual([2, 3]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(target.received).toHaveLength(2);
  });
});

describe('retries', () => {
  it('keeps one order in order while its first version is retried, with one webhook-id', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    let failuresLeft = 2;
    target.answer = (request) =>
      versionOf(request) === 1 && failuresLeft-- > 0 ? { status: 500 } : { status: 204 };
    const orderId = randomUUID();
    const [firstId] = await publishOrderEvents(partner, orderId, [1, 2, 3]);
    const got = await target.waitFor(5);
    expect(got.map(versionOf)).toEqual([1, 1, 1, 2, 3]);
    expect(got.slice(0, 3).map((request) => request.headers['webhook-id'])).toEqual([
      firstId,
      firstId,
      firstId,
    ]);
    // The schedule's steps (with jitter) lie between the tries.
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[1]! * 0.8 - 50);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[2]! * 0.8 - 50);
  });

  it('wakes a version left waiting by a race (its predecessor settled as it was recorded)', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    const orderId = randomUUID();
    const eventId = randomUUID();
    // Version 2 waits (no time) though nothing of its order is open: what a settle racing
    // the recording of the next version leaves behind.
    await sql`
      insert into ordering.webhook_deliveries
        (delivery_id, event_id, partner_id, order_id, store_id, sequence_key, version,
         event_type, payload, status, next_attempt_at, occurred_at, created_at)
      values (${randomUUID()}, ${randomUUID()}, ${partner.partnerId}, ${orderId}, ${storeId},
              ${orderId}, 1, 'order.created', '{"type":"order.created"}', 'delivered', null,
              now(), now() - interval '10 seconds'),
             (${randomUUID()}, ${eventId}, ${partner.partnerId}, ${orderId}, ${storeId},
              ${orderId}, 2, 'order.status_changed', '{"type":"order.status_changed"}',
              'pending', null, now(), now() - interval '10 seconds')
    `.execute(platform.orderingDb);
    const [request] = await target.waitFor(1, () => true, 10_000);
    expect(request!.headers['webhook-id']).toBe(eventId);
  });

  it('honours Retry-After when it asks for longer than the schedule', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    target.answer = (_request, index) =>
      index === 0 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 204 };
    await publishOrderEvents(partner, randomUUID(), [1]);
    const got = await target.waitFor(2);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(1_900);
  });

  it('dead-letters after the schedule; later versions go on; resend delivers it again', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    target.answer = (request) => (versionOf(request) === 1 ? { status: 500 } : { status: 204 });
    const orderId = randomUUID();
    const [firstId] = await publishOrderEvents(partner, orderId, [1, 2]);
    // Three tries of version 1 (the schedule's length), then version 2: a dead version does
    // not hold the order's later ones (they carry the order's latest state).
    const got = await target.waitFor(4);
    expect(got.map(versionOf)).toEqual([1, 1, 1, 2]);

    const dead = await deliveries(partner, { status: 'dead' });
    expect(dead.deliveries).toHaveLength(1);
    const [delivery] = dead.deliveries;
    expect(delivery).toMatchObject({
      eventId: firstId,
      orderId,
      version: 1,
      status: 'dead',
      attempts: 3,
      lastResponseStatus: 500,
      nextAttemptAt: null,
      deliveredAt: null,
    });
    expect((await deliveries(partner, { status: 'failed' })).deliveries).toEqual([]);

    target.answer = () => ({ status: 204 });
    const resent = await resend(partner, delivery!.deliveryId);
    expect(resent.response.status).toBe(202);
    expect(resent.data).toMatchObject({ status: 'pending', attempts: 0 });
    const again = await target.waitFor(5);
    expect(again[4]!.headers['webhook-id']).toBe(firstId);
    await expect
      .poll(async () => (await deliveries(partner, { status: 'dead' })).deliveries)
      .toEqual([]);
  });

  it('a 410 disables the endpoint until it is registered again', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    target.answer = () => ({ status: 410 });
    await publishOrderEvents(partner, randomUUID(), [1]);
    await target.waitFor(1);
    await expect
      .poll(async () => (await getWebhook(partner)).data)
      .toMatchObject({ status: 'disabled', disabledReason: expect.stringContaining('410') });
    const dead = await deliveries(partner, { status: 'dead' });
    expect(dead.deliveries).toHaveLength(1);
    expect(dead.deliveries[0]).toMatchObject({ lastResponseStatus: 410, attempts: 1 });

    // Disabled: later events are not sent.
    await publishOrderEvents(partner, randomUUID(), [1]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(target.received).toHaveLength(1);

    target.answer = () => ({ status: 204 });
    const again = await putWebhook(partner, { url: target.url, events: ALL_EVENTS });
    expect(again.response.status).toBe(200);
    expect(again.data!.status).toBe('active');
    expect((await resend(partner, dead.deliveries[0]!.deliveryId)).response.status).toBe(202);
    await target.waitFor(2);
  });
});

describe('isolation between partners', () => {
  it('a partner whose endpoint hangs does not delay a healthy one', async () => {
    const stuck = await receiver();
    stuck.answer = () => 'hang';
    const healthy = await receiver();
    const slow = await subscribedPartner(stuck);
    const fine = await subscribedPartner(healthy);
    // More of the hanging partner's orders than the dispatcher has slots per partner.
    for (let i = 0; i < 12; i++) await publishOrderEvents(slow.partner, randomUUID(), [1]);
    await stuck.waitFor(1);
    const started = Date.now();
    for (let i = 0; i < 12; i++) await publishOrderEvents(fine.partner, randomUUID(), [1]);
    await healthy.waitFor(12, () => true, 5_000);
    // Well inside one of the stuck partner's timeouts: the healthy one never queued behind it.
    expect(Date.now() - started).toBeLessThan(2_000);
    // The stuck partner never has more than its share in flight at once.
    const inFlightAtOnce = stuck.received.filter(
      (request) => request.at - stuck.received[0]!.at < 300,
    );
    expect(inFlightAtOnce.length).toBeLessThanOrEqual(4);
  });
});

describe('the outbound address rules', () => {
  it('never POSTs to a private address outside the allow-list; the log says why', async () => {
    const partner = await newPartner('distribution');
    // 10.0.0.0/8 is private and not on this deployment's allow-list (127.0.0.1/32 only).
    const put = await putWebhook(partner, { url: 'http://10.1.2.3/hooks', events: ALL_EVENTS });
    expect(put.response.status).toBe(201);
    await publishOrderEvents(partner, randomUUID(), [1]);
    await expect
      .poll(async () => (await deliveries(partner)).deliveries[0], { timeout: 5_000 })
      .toMatchObject({
        status: 'failed',
        attempts: 1,
        lastResponseStatus: null,
        lastError: 'webhook URL does not resolve to a publicly routable address',
      });
  });
});

describe('a failing partner', () => {
  it('opens its breaker: its deliveries pause instead of spending their tries', async () => {
    const failing = await receiver();
    failing.answer = () => ({ status: 500 });
    const { partner } = await subscribedPartner(failing);
    for (let i = 0; i < 12; i++) await publishOrderEvents(partner, randomUUID(), [1]);
    await expect
      .poll(
        async () =>
          (await deliveries(partner, { status: 'failed' })).deliveries.filter((delivery) =>
            delivery.lastError?.includes('paused'),
          ).length,
        { timeout: 5_000 },
      )
      .toBeGreaterThan(0);
    // Fewer calls than twelve deliveries' three tries each: the breaker held the rest back.
    expect(failing.received.length).toBeLessThan(12 * RETRY_SCHEDULE_MS.length);
  });
});

describe('metrics', () => {
  it('counts deliveries by outcome and attempts, and observes the lag', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    const registry = platform.metrics.get('ordering')!.registry;
    // A histogram's `_count` is one of its values, named by metricName.
    const value = async (name: string, labels: Record<string, string> = {}) => {
      const metric = (await registry.getMetricsAsJSON()).find((m) => name.startsWith(m.name));
      const matching = (metric?.values ?? []).filter(
        (v) =>
          ((v as { metricName?: string }).metricName ?? metric?.name) === name &&
          Object.entries(labels).every(([k, l]) => (v.labels as Record<string, unknown>)[k] === l),
      );
      return matching.reduce((sum, v) => sum + v.value, 0);
    };
    const delivered = await value('pcp_webhook_deliveries_total', { outcome: 'delivered' });
    const attempts = await value('pcp_webhook_delivery_attempts_total');
    const lagCount = await value('pcp_webhook_delivery_lag_seconds_count');
    await publishOrderEvents(partner, randomUUID(), [1, 2]);
    await target.waitFor(2);
    await expect
      .poll(() => value('pcp_webhook_deliveries_total', { outcome: 'delivered' }))
      .toBe(delivered + 2);
    expect(await value('pcp_webhook_delivery_attempts_total')).toBeGreaterThanOrEqual(attempts + 2);
    expect(await value('pcp_webhook_delivery_lag_seconds_count')).toBe(lagCount + 2);
  });
});

describe('the secret rotation', () => {
  it('signs with the new and the previous secret for a day, and shows the new one once', async () => {
    const target = await receiver();
    const { partner, secret: previous } = await subscribedPartner(target);
    const rotated = await partner.client.POST('/v1/marketfront/webhooks/rotate-secret');
    expect(rotated.response.status).toBe(200);
    const current = rotated.data!.secret!;
    expect(current).toMatch(/^whsec_/);
    expect(current).not.toBe(previous);
    const overlap = Date.parse(rotated.data!.previousSecretExpiresAt!) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3_600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3_600_000);

    await publishOrderEvents(partner, randomUUID(), [1]);
    const [request] = await target.waitFor(1);
    const { headers, body, payload } = request!;
    expect((headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
    // A receiver still on the old secret, one on the new, and one holding both during the
    // rotation all verify the delivery.
    expect(createWebhookVerifier(previous).verify(body, headers)).toEqual(payload);
    expect(createWebhookVerifier(current).verify(body, headers)).toEqual(payload);
    expect(createWebhookVerifier([current, previous]).verify(body, headers)).toEqual(payload);
    expect(() =>
      createWebhookVerifier(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        body,
        headers,
      ),
    ).toThrow(WebhookVerificationError);
  });

  it('stores the secrets sealed: the table holds neither in plaintext', async () => {
    const target = await receiver();
    const { partner, secret: previous } = await subscribedPartner(target);
    const rotated = await partner.client.POST('/v1/marketfront/webhooks/rotate-secret');
    const current = rotated.data!.secret!;
    const row = await platform.orderingDb
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('partner_id', '=', partner.partnerId)
      .executeTakeFirstOrThrow();
    const stored = JSON.stringify(row);
    for (const secret of [previous, current]) {
      expect(stored).not.toContain(secret.slice('whsec_'.length));
    }
    expect(row.secret).toMatch(/^sb2\.dev\./);
    expect(row.previous_secret).toMatch(/^sb2\.dev\./);
  });

  it('needs an endpoint to rotate', async () => {
    const partner = await newPartner('distribution');
    expectProblem(
      await partner.client.POST('/v1/marketfront/webhooks/rotate-secret'),
      404,
      'WEBHOOK_NOT_FOUND',
    );
  });
});

describe('the delivery log', () => {
  it('pages newest first by cursor, and refuses cursors and ids it did not issue', async () => {
    const target = await receiver();
    const { partner } = await subscribedPartner(target);
    const orders = [randomUUID(), randomUUID(), randomUUID()];
    for (const orderId of orders) await publishOrderEvents(partner, orderId, [1]);
    await target.waitFor(3);

    const seen: (string | null)[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof deliveries>> = await deliveries(partner, {
        limit: 2,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...page.deliveries.map((d) => d.orderId));
      cursor = page.nextCursor;
    } while (cursor);
    // Newest recorded first (the consumer may record concurrent events in any order): the
    // pages together are the whole list, once each.
    const whole = await deliveries(partner);
    expect(seen).toEqual(whole.deliveries.map((d) => d.orderId));
    expect([...seen].sort()).toEqual([...orders].sort());

    for (const query of [
      { cursor: 'nope' },
      { cursor: 'A'.repeat(300) },
      { limit: 0 },
      { limit: 101 },
    ]) {
      expectProblem(
        await partner.client.GET('/v1/marketfront/webhooks/deliveries', { params: { query } }),
        400,
        'REQUEST_INVALID',
      );
    }
    // A status the types do not have.
    expectRawProblem(
      await call(platform.baseUrl, 'GET', '/v1/marketfront/webhooks/deliveries?status=delivered', {
        apiKey: partner.apiKey,
      }),
      400,
      'REQUEST_INVALID',
    );
    expectProblem(await resend(partner, 'not-a-uuid'), 400, 'REQUEST_INVALID');
    expectProblem(await resend(partner, randomUUID()), 404, 'WEBHOOK_DELIVERY_NOT_FOUND');
    // Another partner's delivery is unknown to this one.
    const stranger = await newPartner('distribution');
    const theirs = (await deliveries(partner)).deliveries[0]!.deliveryId;
    expectProblem(await resend(stranger, theirs), 404, 'WEBHOOK_DELIVERY_NOT_FOUND');
    expect((await deliveries(stranger)).deliveries).toEqual([]);
  });
});
