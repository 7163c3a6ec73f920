/**
 * A store's event versions never go backwards (docs/guide/sandbox.md#reset): a commerce
 * partner resets and creates its store again with the same id, and a distribution partner
 * subscribed to store events hears the new store's events, each with a version past those it
 * was sent for the deleted store, none of them dead-lettered by ordering.
 */
import { storeProfile } from '@pcp/testing/fixtures';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { call } from './http.js';
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-receiver.js';

/** Ordering's durable consumer that records store events as deliveries. */
const STORE_DURABLE = 'ordering-store-webhook-deliveries';

let env: TestEnvironment;
let platform: TestPlatform;
let receiver: WebhookReceiver;

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, {
    gatewayEnv: { RATE_LIMIT_READS_PER_MIN: '100000', RATE_LIMIT_WRITES_PER_MIN: '100000' },
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
    },
  });
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await platform?.stop();
  await env?.cleanup();
});

/** A new partner's test key. */
async function testKey(kind: 'commerce' | 'distribution'): Promise<string> {
  return (await platform.newPartner(kind, { mode: 'test' })).apiKey;
}

const send = (method: string, path: string, apiKey: string, body?: unknown) =>
  call(platform.baseUrl, method, path, { apiKey, ...(body === undefined ? {} : { body }) });

/** The store-event recorder's messages with `outcome`. */
async function recorderCount(outcome: string): Promise<number> {
  const metric = platform.metrics
    .get('ordering')!
    .registry.getSingleMetric('pcp_consumer_messages_total');
  const { values } = await metric!.get();
  return values
    .filter((v) => v.labels.consumer === STORE_DURABLE && v.labels.outcome === outcome)
    .reduce((sum, v) => sum + v.value, 0);
}

const statusChangeOf = (storeId: string) => (request: ReceivedWebhook) =>
  request.payload?.type === 'store.status_changed' && request.payload?.data?.storeId === storeId;

describe('a test store created again after a sandbox reset', () => {
  it("continues its event versions, so a subscribed partner hears the new store's events", async () => {
    const commerceKey = await testKey('commerce');
    const distributionKey = await testKey('distribution');
    const endpoint = await send('PUT', '/v1/marketfront/webhooks', distributionKey, {
      url: receiver.url,
      events: ['store.status_changed'],
    });
    expect(endpoint.status, endpoint.text).toBe(201);

    const storeId = randomUUID();
    const createStore = async () => {
      const created = await send('PUT', `/v1/commerce/stores/${storeId}`, commerceKey, {
        ...storeProfile(),
      });
      expect(created.status, created.text).toBe(201);
    };
    const setStatus = async (status: 'paused' | 'online') => {
      const set = await send('POST', `/v1/commerce/stores/${storeId}/status`, commerceKey, {
        status,
        ...(status === 'paused' ? { reason: 'too_busy' } : {}),
      });
      expect(set.status, set.text).toBeLessThan(300);
    };
    const versions = () =>
      receiver.received.filter(statusChangeOf(storeId)).map((r) => r.payload.data.version);

    await createStore();
    await setStatus('paused');
    await setStatus('online');
    await receiver.waitFor(2, statusChangeOf(storeId));
    const before = versions() as number[];
    expect(before).toHaveLength(2);
    const deadLettered = await recorderCount('dead_lettered');

    const reset = await send('POST', '/v1/test/reset', commerceKey);
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body.deleted).toMatchObject({ 'stores.stores': 1 });

    await createStore();
    await setStatus('paused');
    const [, , again] = await receiver.waitFor(3, statusChangeOf(storeId), 20_000);
    expect(again!.payload.data).toMatchObject({ storeId, status: 'paused' });
    expect(again!.payload.data.version).toBeGreaterThan(Math.max(...before));
    expect(versions()).toEqual([...before, Math.max(...before) + 1]);
    expect(await recorderCount('dead_lettered')).toBe(deadLettered);
  }, 60_000);
});
