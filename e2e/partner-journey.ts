/** One partner journey through the platform, shared by the tracing and log-hygiene tests. */
import { createPlatformClient, ingestCatalog, type PlatformClient } from '@pcp/client';
import type { Logger } from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import { startPlatform, type TestPlatform } from '@pcp/testing/platform';
import { startCatalogHost } from './catalog-host.js';
import { sodaOrder } from './orders.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export const PLACE_ROUTE = '/v1/marketfront/orders/place';
export const TEST_CARD = {
  cardNumber: '4242424242424242',
  cvc: '737',
  expMonth: 11,
  expYear: 2034,
};

export interface Journey {
  readonly env: TestEnvironment;
  readonly platform: TestPlatform;
  readonly receiver: WebhookReceiver;
  readonly commerce: { apiKey: string; partnerId: string };
  readonly distribution: { apiKey: string; partnerId: string; client: PlatformClient };
  /** The distribution partner's webhook signing secret. */
  readonly webhookSecret: string;
  readonly storeId: string;
  readonly catalogIds: ReturnType<typeof cartTestCatalog>['ids'];
  close(): Promise<void>;
}

/**
 * The platform on its own database and prefixes, with a commerce partner's store and
 * catalog ingested, and a distribution partner whose webhook endpoint is on loopback.
 */
export async function startJourney(logger?: Logger): Promise<Journey> {
  const env = await createTestEnvironment();
  const platform = await startPlatform(env, {
    ...(logger ? { logger } : {}),
    orderingEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '100',
    },
  });
  const host = await startCatalogHost();
  const receiver = await startWebhookReceiver();
  const close = async () => {
    await receiver.close();
    await host.close();
    await platform.stop();
    await env.cleanup();
  };
  try {
    const commerce = await platform.newPartner('commerce');
    const commerceClient = createPlatformClient({
      baseUrl: platform.baseUrl,
      apiKey: commerce.apiKey,
    });
    const storeId = randomUUID();
    const put = await commerceClient.PUT('/v1/commerce/stores/{storeId}', {
      params: { path: { storeId } },
      body: storeProfile({
        availability: alwaysOpen,
        minimumOrder: 5,
        orderSubmissionUrl: undefined,
      }),
    });
    expect(put.response.status).toBeLessThan(300);
    const catalog = cartTestCatalog(storeId);
    const ingest = await ingestCatalog(commerceClient, {
      storeId,
      callbackUrl: host.serveJson(`/${randomUUID()}.json`, catalog.document),
      timeoutMs: 30_000,
    });
    expect(ingest.status).toBe('succeeded');

    const partner = await platform.newPartner('distribution', { paymentTypes: ['CARD'] });
    const client = createPlatformClient({ baseUrl: platform.baseUrl, apiKey: partner.apiKey });
    const webhook = await client.PUT('/v1/marketfront/webhooks', {
      body: { url: receiver.url, events: ['order.created', 'order.status_changed'] },
    });
    expect(webhook.response.status).toBe(201);
    return {
      env,
      platform,
      receiver,
      commerce,
      distribution: { ...partner, client },
      webhookSecret: webhook.data!.secret!,
      storeId,
      catalogIds: catalog.ids,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Vault the test card for a new end user and place a card order with it; `beforePlace` runs
 * between the two (to set the processor's faults for the order alone).
 */
export async function placeCardOrder(
  journey: Journey,
  options: {
    expectedStatus?: number;
    beforePlace?: () => void;
    /** Further headers of the place request (a partner's traceparent, say). */
    headers?: Record<string, string>;
  } = {},
) {
  const { client } = journey.distribution;
  const endUser = `buyer-${randomUUID()}`;
  const vaulted = await client.POST('/v1/marketfront/payments/cards', {
    params: { header: { 'X-End-User-Id': endUser } },
    body: { ...TEST_CARD, cardholderName: 'Pat Doe' },
  });
  expect(vaulted.response.status).toBe(201);
  options.beforePlace?.();
  const placed = await client.POST(PLACE_ROUTE, {
    params: { header: { 'Idempotency-Key': randomUUID(), 'X-End-User-Id': endUser } },
    body: sodaOrder(journey.catalogIds, journey.storeId, vaulted.data!.paymentId),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  expect(placed.response.status, JSON.stringify(placed.error)).toBe(options.expectedStatus ?? 201);
  return { orderId: placed.data?.orderId, requestId: placed.response.headers.get('x-request-id')! };
}
