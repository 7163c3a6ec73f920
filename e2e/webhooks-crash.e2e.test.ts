import { events } from '@pcp/contracts';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '../test-support/environment.js';
import { startPlatform, type TestPlatform } from '../test-support/platform.js';
import { startServiceProcess, waitUntilServing } from '../test-support/service-process.js';
import { call } from './http.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/**
 * A dispatcher that dies mid-delivery: ordering runs as its own process, SIGKILLed while
 * the partner's endpoint holds the request; the next replica delivers the event again once
 * the dead one's lease lapses (at least once, the same webhook-id).
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

describe('the dispatcher killed mid-delivery', () => {
  it('delivers the event again from another replica once the lease lapses', async () => {
    const partner = await platform.newPartner('distribution');
    const doomed = startOrdering();
    await waitUntilServing('ordering', env);
    const put = await call(platform.baseUrl, 'PUT', '/v1/marketfront/webhooks', {
      apiKey: partner.apiKey,
      body: { url: target.url, events: ['order.created'] },
    });
    expect(put.status).toBe(201);
    target.answer = (_request, index) => (index === 0 ? 'hang' : { status: 204 });

    const eventId = randomUUID();
    await env.nc.jetstream().publish(
      `${env.prefix}.${events.orderStatusChanged.subject}`,
      JSON.stringify({
        id: eventId,
        type: 'ordering.v1.order-status-changed',
        occurredAt: new Date().toISOString(),
        version: 1,
        data: {
          event: 'order.created',
          orderId: randomUUID(),
          storeId: randomUUID(),
          partnerId: partner.partnerId,
          state: 'open',
          status: 'pending',
          previousStatus: null,
        },
      }),
      { msgID: eventId },
    );
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
        const log = await call(platform.baseUrl, 'GET', '/v1/marketfront/webhooks/deliveries', {
          apiKey: partner.apiKey,
        });
        return log.body.deliveries[0];
      })
      .toMatchObject({ eventId, status: 'delivered', attempts: 1 });
  }, 60_000);
});
