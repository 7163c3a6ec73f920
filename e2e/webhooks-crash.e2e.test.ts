import { createPlatformClient } from '@pcp/client';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startServiceProcess, waitUntilServing } from '@pcp/testing/service-process';
import {
  publishOrderEvent,
  startWebhookReceiver,
  type WebhookReceiver,
} from './webhook-receiver.js';

/**
 * Dispatchers as real processes (ordering runs as its own process here): two replicas
 * sharing one partner's deliveries keep each order in order; one SIGKILLed while the
 * partner's endpoint holds the request leaves the event to the next replica once its lease
 * lapses (at least once, the same webhook-id). Partners use the typed client.
 */

const WEBHOOK_TIMEOUT_MS = 1_000;
const orderingEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWLIST: '127.0.0.1/32',
  WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
  WEBHOOK_POLL_MS: '100',
};

let env: TestEnvironment;
let platform: TestPlatform;
let target: WebhookReceiver;
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, { orderingEnv });
  await platform.ordering.stop();
  target = await startWebhookReceiver();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await target?.close();
  await platform?.stop();
  await env?.cleanup();
});

function startOrdering(): ChildProcess {
  const child = startServiceProcess('ordering', env, orderingEnv);
  children.push(child);
  return child;
}

const publishEvent = (partnerId: string, orderId: string, version: number) =>
  publishOrderEvent(env, { partnerId, orderId, storeId: randomUUID(), version });

/** A distribution partner with its typed client. */
async function newPartner() {
  const partner = await platform.newPartner('distribution');
  return {
    ...partner,
    client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
  };
}

describe('two dispatcher replicas', () => {
  it('share the work without breaking any order’s order or losing an event', async () => {
    const replicas = [startOrdering(), startOrdering()];
    await waitUntilServing('ordering', env);
    const receiver = await startWebhookReceiver();
    try {
      const partner = await newPartner();
      const put = await partner.client.PUT('/v1/marketfront/webhooks', {
        body: { url: receiver.url, events: ['order.created', 'order.status_changed'] },
      });
      expect(put.response.status).toBe(201);
      const orders = Array.from({ length: 8 }, () => randomUUID());
      const versions = 6;
      for (let version = 1; version <= versions; version++) {
        for (const orderId of orders) await publishEvent(partner.partnerId, orderId, version);
      }
      await receiver.waitFor(orders.length * versions, () => true, 30_000);
      for (const orderId of orders) {
        const seen = receiver.received
          .filter((request) => request.payload.data.orderId === orderId)
          .map((request) => request.payload.data.version as number);
        expect(new Set(seen).size, orderId).toBe(versions);
        expect(seen, orderId).toEqual([...seen].sort((a, b) => a - b));
      }
    } finally {
      await receiver.close();
      for (const replica of replicas) replica.kill('SIGTERM');
      await Promise.all(
        replicas.map((replica) => new Promise((resolve) => replica.once('exit', resolve))),
      );
    }
  }, 60_000);
});

describe('the dispatcher killed mid-delivery', () => {
  it('delivers the event again from another replica once the lease lapses', async () => {
    const partner = await newPartner();
    const doomed = startOrdering();
    await waitUntilServing('ordering', env);
    const put = await partner.client.PUT('/v1/marketfront/webhooks', {
      body: { url: target.url, events: ['order.created'] },
    });
    expect(put.response.status).toBe(201);
    target.answer = (_request, index) => (index === 0 ? 'hang' : { status: 204 });

    const eventId = await publishEvent(partner.partnerId, randomUUID(), 1);
    await target.waitFor(1);
    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));
    const killedAt = Date.now();

    startOrdering();
    await waitUntilServing('ordering', env);
    const [first, second] = await target.waitFor(2, () => true, 30_000);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.headers['webhook-id']).toBe(eventId);
    // Not before the dead replica's lease (twice the timeout and 5 s) ran out.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2 * WEBHOOK_TIMEOUT_MS + 5_000 - 200);
    expect(second!.at).toBeGreaterThan(killedAt);
    await expect
      .poll(async () => {
        const log = await partner.client.GET('/v1/marketfront/webhooks/deliveries');
        return log.data?.deliveries[0];
      })
      .toMatchObject({ eventId, status: 'delivered', attempts: 1 });
  }, 60_000);
});
