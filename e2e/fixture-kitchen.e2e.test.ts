/**
 * The fixture stores (docs/guide/sandbox.md#fixture-stores): seeded by the platform with their
 * bundled catalogs, and a kitchen that moves an order placed there to completion with every order
 * webhook, signed per Standard Webhooks, while two ordering replicas (processes) share it and one
 * is killed midway: each status exactly once, in order.
 */
import { createPlatformClient, type PlatformClient } from '@pcp/client';
import {
  fixtureCatalogSets,
  fixtureSoldOutItemIds,
  fixtureStoreIds,
  type CatalogSetDocument,
} from '@pcp/contracts';
import { sql } from 'kysely';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startServiceProcess, waitUntilServing } from '@pcp/testing/service-process';
import { newBuyer } from './orders.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

const orderingEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWLIST: '127.0.0.1/32',
  WEBHOOK_POLL_MS: '100',
};
/** The kitchen's minute in about six seconds; a replica looks for due steps five times a second. */
const kitchenEnv = {
  ...orderingEnv,
  ORDERING_FIXTURE_KITCHEN_INTERVAL_MS: '200',
  ORDERING_FIXTURE_KITCHEN_STEP_SCALE: '0.1',
};

const [newYork] = fixtureStoreIds;
const document = fixtureCatalogSets[newYork] as CatalogSetDocument;

let env: TestEnvironment;
let platform: TestPlatform;
let receiver: WebhookReceiver;
let distribution: { partnerId: string; apiKey: string; client: PlatformClient };
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  platform = await startPlatform(env, { orderingEnv });
  // Ordering runs as two processes of the test's own.
  await platform.ordering.stop();
  receiver = await startWebhookReceiver();
  // The fixture stores are test stores: only a test key sees them.
  const partner = await platform.newPartner('distribution', { mode: 'test' });
  distribution = {
    ...partner,
    client: createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey }),
  };
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await receiver?.close();
  await platform?.stop();
  await env?.cleanup();
});

function startOrdering(): ChildProcess {
  const child = startServiceProcess('ordering', env, kitchenEnv);
  children.push(child);
  return child;
}

/** The id of the fixture catalog's item called `name`. */
function itemNamed(name: string): string {
  const item = Object.values(document.items).find((candidate) => candidate.name === name);
  if (!item) throw new Error(`no item ${name}`);
  return item.itemId;
}

function groupNamed(name: string): string {
  const group = Object.values(document.modifierGroups).find((g) => g.name === name);
  if (!group) throw new Error(`no modifier group ${name}`);
  return group.modifierGroupId;
}

interface Line {
  itemId: string;
  lineItemId: string;
  quantity: number;
  modifierGroups?: { modifierGroupId: string; lineItems: Line[] }[];
}

/** A line of the named item, with its modifier groups' choices. */
const line = (name: string, quantity = 1, modifierGroups?: Line['modifierGroups']): Line => ({
  itemId: itemNamed(name),
  lineItemId: randomUUID(),
  quantity,
  ...(modifierGroups ? { modifierGroups } : {}),
});

const group = (name: string, lineItems: Line[]) => ({
  modifierGroupId: groupNamed(name),
  lineItems,
});

/** Resolves once the store shows its bundled catalog (the catalog activates it on start). */
async function fixtureCatalogActive(storeId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { data } = await distribution.client.GET('/v1/marketfront/stores/{storeId}', {
      params: { path: { storeId } },
    });
    if (data?.catalogSetId === fixtureCatalogSets[storeId]?.catalogSetId) return;
    if (Date.now() > deadline) throw new Error(`the fixture catalog of ${storeId} never showed`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('the fixture stores', () => {
  it('are seeded with their bundled catalogs, served to distribution partners', async () => {
    for (const storeId of fixtureStoreIds) await fixtureCatalogActive(storeId);
    const { data } = await distribution.client.GET('/v1/marketfront/stores/{storeId}', {
      params: { path: { storeId: fixtureStoreIds[2] } },
    });
    expect(data).toMatchObject({ timezone: 'Asia/Tokyo', currency: 'JPY' });
  });

  it('are test stores: a live key finds none of them', async () => {
    const live = await platform.newPartner('distribution');
    const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: live.apiKey });
    for (const storeId of fixtureStoreIds) {
      const { response, error } = await client.GET('/v1/marketfront/stores/{storeId}', {
        params: { path: { storeId } },
      });
      expect(response.status).toBe(404);
      expect(error).toMatchObject({ errorCode: 'STORE_NOT_FOUND' });
    }
  });
});

describe('the fixture stores’ occasional events', () => {
  it('mark an item out for a few minutes through the partner API, seen by partners', async () => {
    await fixtureCatalogActive(newYork);
    // Turn 6 is New York's first item out; due now (the stores replica looks every 10 s).
    await sql`update fixture_store_events set next_at = now(), turn = 6`.execute(platform.storesDb);
    const itemId = fixtureSoldOutItemIds[newYork]![0]!;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const { data } = await distribution.client.GET(
        '/v1/marketfront/stores/{storeId}/item-availability',
        { params: { path: { storeId: newYork } } },
      );
      const out = data?.items.find((item) => item.itemId === itemId);
      if (out) {
        const minutes = (Date.parse(out.until!) - Date.now()) / 60_000;
        expect(minutes).toBeGreaterThan(4);
        expect(minutes).toBeLessThanOrEqual(5);
        break;
      }
      if (Date.now() > deadline) throw new Error('the item was never marked out');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 30_000);
});

describe('the fixture kitchen', () => {
  it('moves a delivery order to completion with every webhook, one replica killed midway', async () => {
    await fixtureCatalogActive(newYork);
    const replicas = [startOrdering(), startOrdering()];
    await waitUntilServing('ordering', env);
    const put = await distribution.client.PUT('/v1/marketfront/webhooks', {
      body: { url: receiver.url, events: ['order.created', 'order.status_changed'] },
    });
    expect(put.response.status, JSON.stringify(put.error)).toBe(201);
    const verifier = new Webhook(put.data!.secret!);

    const buyer = await newBuyer(distribution.client, '4242424242424242');
    const body = {
      cart: {
        catalogSetId: document.catalogSetId,
        storeId: newYork,
        lineItems: [
          line('Cheeseburger', 1, [
            group('Side', [line('Fries')]),
            group('Extras', [line('Bacon', 1, [group('Bacon style', [line('Crispy')])])]),
          ]),
          line('Fountain soda', 2),
        ],
      },
      fulfillment: {
        mode: 'DELIVERY_BY_MERCHANT' as const,
        scheduleType: 'ASAP' as const,
        address: {
          address1: '75 Christopher St',
          city: 'New York',
          state: 'NY',
          postalCode: '10014',
          country: 'US',
        },
        deliveryType: 'DOOR_TO_DOOR' as const,
      },
      client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
      paymentType: 'CARD' as const,
      paymentId: buyer.paymentId,
      tip: 2,
    };
    // A new replica's first validate compiles the catalog; a retryable answer is tried again.
    let validated;
    for (let attempt = 1; ; attempt++) {
      validated = await distribution.client.POST('/v1/marketfront/orders/validate', {
        params: { header: { 'X-End-User-Id': buyer.endUser } },
        body,
      });
      if (validated.response.status < 500 || attempt === 5) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(validated.data?.errors, JSON.stringify(validated.data ?? validated.error)).toEqual([]);
    const placed = await distribution.client.POST('/v1/marketfront/orders/place', {
      params: { header: { 'Idempotency-Key': randomUUID(), 'X-End-User-Id': buyer.endUser } },
      body: { ...body, amounts: { total: validated.data!.amounts!.total } },
    });
    expect(placed.response.status, JSON.stringify(placed.error)).toBe(201);
    const { orderId } = placed.data!;
    const ofOrder = (request: { payload: { data?: { orderId?: string } } }) =>
      request.payload.data?.orderId === orderId;

    // Midway: once the kitchen has it preparing, one replica dies without a word.
    await receiver.waitFor(3, ofOrder, 30_000);
    replicas[0]!.kill('SIGKILL');
    // Deliveries of an order go in order: its last version comes after all the others.
    await receiver.waitFor(
      1,
      (request) => ofOrder(request) && request.payload.data.version === 6,
      60_000,
    );
    // Anything late (a step taken twice) would arrive within a few kitchen passes.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const received = receiver.received.filter(ofOrder);
    for (const request of received) {
      expect(verifier.verify(request.body, request.headers as Record<string, string>)).toEqual(
        request.payload,
      );
    }
    // Delivery is at least once: a delivery the killed replica had in flight comes again from
    // the other, as the same event (webhook-id). Each event, though, is one step, taken once.
    const byId = new Map(received.map((request) => [request.headers['webhook-id'], request]));
    const all = [...byId.values()];
    expect(all).toHaveLength(6);
    expect(all.map((request) => request.payload.data.version)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(all.map((request) => [request.payload.data.state, request.payload.data.status])).toEqual(
      [
        ['open', 'pending'],
        ['open', 'confirmed'],
        ['open', 'preparing'],
        ['open', 'ready'],
        ['open', 'inTransit'],
        ['completed', 'completed'],
      ],
    );
    // The confirm gave an estimate: the kitchen's time to ready from then.
    expect(all[1]!.payload.data.estimatedReadyAt).not.toBeNull();
    const order = await distribution.client.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId } },
    });
    expect(order.data).toMatchObject({ state: 'completed', version: 6 });
    replicas[1]!.kill('SIGTERM');
    await new Promise((resolve) => replicas[1]!.once('exit', resolve));
  }, 120_000);
});
