import { createPlatformClient } from '@pcp/client';
import { events } from '@pcp/contracts';
import { deadLetterHeaders, deadLetterSubject } from '@pcp/service-kit';
import { sql } from 'kysely';
import { headers as createHeaders } from 'nats';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { runAdminProcess } from '@pcp/testing/service-process';
import {
  orderEventEnvelope,
  publishOrderEvent,
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * When an order event is recorded late: its recording failing for a while on the real
 * database (a trigger refusing that one row) must not let the next version overtake it, with
 * the recorder's real schedule; and an event the recorder gave up on, republished from the
 * dead letters with the real `main.js admin` process, is delivered when recorded, while the
 * later version already sent is not sent again.
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

    // Past the fourth try of the recorder's former schedule (36 s): its fifth came at 156 s,
    // long after its 60 s wait had let version 3 out first. Now the fifth try is at 51 s and
    // version 3 waits for it.
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

describe('an order event republished from the dead letters with the admin command', () => {
  it('is delivered when recorded; the later version already sent is not sent again', async () => {
    const partnerId = await subscribedPartner();
    const orderId = randomUUID();
    const storeId = randomUUID();
    for (const version of [1, 3]) {
      await publishOrderEvent(env, { partnerId, orderId, storeId, version });
    }
    await target.waitFor(1, ofOrder(orderId));
    // Version 2 never came: once the grace is over (as when the recorder gave up on it),
    // version 3 goes out without it. Aged only once recorded (on a loaded machine it may
    // still be on its way): an update that found no row would leave it to the real grace.
    await vi.waitFor(
      async () => {
        const aged = await sql`
          update ordering.webhook_deliveries set created_at = created_at - interval '1 day'
           where order_id = ${orderId} and version = 3
        `.execute(platform.orderingDb);
        expect(Number(aged.numAffectedRows)).toBe(1);
      },
      { timeout: 15_000, interval: 100 },
    );
    await target.waitFor(2, ofOrder(orderId));

    // Version 2 as the recorder dead-letters it: the event, and where and why it failed.
    const headers = createHeaders();
    headers.set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    headers.set(deadLetterHeaders.stream, `${env.prefix}_events`);
    headers.set(deadLetterHeaders.sequence, '42');
    headers.set(deadLetterHeaders.subject, `${env.prefix}.${events.orderStatusChanged.subject}`);
    headers.set(deadLetterHeaders.deliveries, '12');
    headers.set(deadLetterHeaders.reason, 'test: recording refused (after 12 deliveries)');
    const letter = JSON.stringify(orderEventEnvelope({ partnerId, orderId, storeId, version: 2 }));
    await env.nc.jetstream().publish(deadLetterSubject(env.prefix, DURABLE), letter, { headers });
    // What PcpOrderEventsDeadLettered watches (read at most every 5 s).
    const waiting = () => recorderMetric('pcp_consumer_dead_letters');
    await expect.poll(waiting, { timeout: 10_000 }).toBe(1);

    const listed = await runAdminProcess('ordering', env, [
      'dead-letters-list',
      '--consumer',
      DURABLE,
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.result).toMatchObject({
      total: 1,
      nextFrom: null,
      deadLetters: [
        {
          consumer: DURABLE,
          subject: `${env.prefix}.${events.orderStatusChanged.subject}`,
          stream: `${env.prefix}_events`,
          streamSequence: 42,
          deliveries: 12,
          reason: 'test: recording refused (after 12 deliveries)',
          size: letter.length,
        },
      ],
    });
    // Never the data, which may hold partner data.
    expect(listed.stdout).not.toContain(orderId);

    const republished = await runAdminProcess('ordering', env, [
      'dead-letters-republish',
      '--consumer',
      DURABLE,
      '--all',
    ]);
    expect(republished.code, republished.stderr).toBe(0);
    expect(republished.result).toMatchObject({
      remaining: 0,
      republished: [
        {
          sequence: listed.result.deadLetters[0].sequence,
          subject: `${env.prefix}.${events.orderStatusChanged.subject}`,
          republishedTo: { stream: `${env.prefix}_events` },
          duplicate: false,
        },
      ],
    });
    await target.waitFor(3, ofOrder(orderId));
    await sleep(1_000);
    expect(versionsOf(orderId)).toEqual([1, 3, 2]);
    await expect.poll(waiting, { timeout: 10_000 }).toBe(0);
  }, 60_000);

  it('refuses an unknown command or a bad option with the usage, before connecting', async () => {
    const unknown = await runAdminProcess('ordering', env, ['reconcile']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command reconcile');
    for (const command of [
      'outbox-list',
      'outbox-republish',
      'dead-letters-list',
      'dead-letters-republish',
    ]) {
      expect(unknown.stderr).toContain(`\n  ${command} `);
    }
    for (const args of [
      ['dead-letters-republish', '--all'],
      ['dead-letters-list', '--limit', '100000'],
      ['outbox-republish', '--sequence', '1', '--all'],
      ['outbox-list', '--verbose'],
    ]) {
      // A database that does not exist: a refusal comes before any connection.
      const refused = await runAdminProcess('ordering', env, args, {
        DATABASE_URL: `${env.databaseUrl}_missing`,
      });
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr, args.join(' ')).toMatch(new RegExp(`^${args[0]}: `));
      expect(refused.stdout).toBe('');
    }
    const listed = await runAdminProcess('ordering', env, ['outbox-list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.result).toMatchObject({ parked: 0, events: [] });
  }, 60_000);
});
