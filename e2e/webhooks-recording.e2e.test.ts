import { createPlatformClient } from '@pcp/client';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '../test-support/environment.js';
import { startPlatform, type TestPlatform } from '../test-support/platform.js';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * When an order event is recorded late: its recording failing for a while on the real
 * database (a trigger refusing that one row) must not let the next version overtake it, with
 * the recorder's real schedule.
 */

const DURABLE = 'ordering-webhook-deliveries';
const orderingEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWLIST: '127.0.0.1/32',
  WEBHOOK_POLL_MS: '100',
};

let env: TestEnvironment;
let platform: TestPlatform;
let target: WebhookReceiver;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, { orderingEnv });
  target = await startWebhookReceiver();
});

afterAll(async () => {
  await target?.close();
  await platform?.stop();
  await env?.cleanup();
});

/** A distribution partner whose endpoint is `target`, for every order event. */
async function subscribedPartner(): Promise<string> {
  const partner = await platform.newPartner('distribution');
  const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
  const put = await client.PUT('/v1/marketfront/webhooks', {
    body: { url: target.url, events: ['order.created', 'order.status_changed'] },
  });
  expect(put.response.status).toBe(201);
  return partner.partnerId;
}

const ofOrder = (orderId: string) => (request: ReceivedWebhook) =>
  request.payload?.data?.orderId === orderId;
const versionsOf = (orderId: string) =>
  target.received.filter(ofOrder(orderId)).map((request) => request.payload.data.version as number);

/** A metric of the ordering service for the recorder's durable (and `outcome`, if given). */
async function recorderMetric(name: string, outcome?: string): Promise<number> {
  const metric = platform.metrics.get('ordering')!.registry.getSingleMetric(name);
  const { values } = await metric!.get();
  return values
    .filter((v) => v.labels.consumer === DURABLE && (!outcome || v.labels.outcome === outcome))
    .reduce((sum, v) => sum + v.value, 0);
}

describe('an order event recorded late', () => {
  it('holds the next version back until it is recorded, then sends both in order', async () => {
    const partnerId = await subscribedPartner();
    const orderId = randomUUID();
    const storeId = randomUUID();
    // Version 2's row cannot be written (as one replica's pool timing out would have it).
    await sql`
      create function ordering.refuse_version_2() returns trigger language plpgsql as $$
      begin raise exception 'test: recording refused'; end $$
    `.execute(platform.orderingDb);
    await sql`
      create trigger refuse_version_2 before insert on ordering.webhook_deliveries for each row
      when (new.order_id = ${sql.lit(orderId)} and new.version = 2)
      execute function ordering.refuse_version_2()
    `.execute(platform.orderingDb);
    const retriedBefore = await recorderMetric('pcp_consumer_messages_total', 'retried');
    for (const version of [1, 2, 3]) {
      await publishOrderEvent(env, { partnerId, orderId, storeId, version });
    }
    await target.waitFor(1, ofOrder(orderId));

    // Longer than the recorder used to retry before its fifth try (36 s) and than a version
    // used to wait for its predecessor (60 s) minus that: version 3 went out at 60 s, before
    // version 2, which was recorded at 156 s.
    await sleep(40_000);
    expect(versionsOf(orderId)).toEqual([1]);
    expect(await recorderMetric('pcp_consumer_messages_total', 'retried')).toBeGreaterThanOrEqual(
      retriedBefore + 3,
    );
    await sql`drop trigger refuse_version_2 on ordering.webhook_deliveries`.execute(
      platform.orderingDb,
    );

    await target.waitFor(3, ofOrder(orderId), 30_000).catch(() => undefined);
    expect(versionsOf(orderId)).toEqual([1, 2, 3]);
  }, 120_000);
});
