// The distribution partner registers its webhook endpoint, finds the store and reads its
// catalog.
import { createWebhookVerifier, type PlatformClient } from '@pcp/client';
import type { Server } from 'node:http';
import { call } from '../exchanges.js';
import { check, json, money, step } from '../output.js';
import { startWebhookReceiver, type WebhookReceiver } from '../partner-servers.js';
import type { OpenStore } from './store.js';

/** Where the end customer stands: Millennium Park, about a kilometre from the store. */
const customerLocation = { latitude: 41.8827, longitude: -87.6233 };
const EVENTS = ['order.created', 'order.status_changed', 'order.cancelled'] as const;

export async function registerWebhooks(
  market: PlatformClient,
  servers: Server[],
): Promise<WebhookReceiver> {
  step('The distribution partner registers its webhook endpoint (a receiver on this machine)');
  const receiver = await startWebhookReceiver();
  servers.push(receiver.server);
  const endpoint = await call(
    () =>
      market.PUT('/v1/marketfront/webhooks', { body: { url: receiver.url, events: [...EVENTS] } }),
    201,
    {
      note: `url=${receiver.url} events=${EVENTS.join(',')}`,
      answer: (body) => `status ${body.status}, secret ${body.secret?.slice(0, 10)}… (kept)`,
    },
  );
  const secret = endpoint.secret ?? '';
  check(/^whsec_/.test(secret), 'a whsec_ signing secret', endpoint.secret);
  receiver.verifier = createWebhookVerifier(secret);
  return receiver;
}

export async function discoverStore(market: PlatformClient, storeName: string, store: OpenStore) {
  step('… discovers the store near its customer');
  const found = await call(
    () =>
      market.POST('/v1/marketfront/stores/discover', {
        body: { location: customerLocation, fulfillmentType: 'PICKUP', query: storeName },
      }),
    200,
    {
      note: `location=${customerLocation.latitude},${customerLocation.longitude} PICKUP query="${storeName}"`,
      answer: (body) =>
        body.stores
          .map(
            (s) => `${s.name} ${s.distanceMeters} m away, ${s.isOpenNow ? 'open now' : 'closed'}`,
          )
          .join('; ') || 'no stores',
    },
  );
  const discovered = found.stores.find((candidate) => candidate.storeId === store.storeId);
  check(discovered, `the store ${store.storeId} among the results`, () => json(found.stores));
  check(discovered.isOpenNow, 'the store open now', json(discovered));
  check(
    discovered.catalogSetId === store.catalogSetId,
    `its catalogSetId ${store.catalogSetId}`,
    discovered.catalogSetId,
  );
}

export async function readCatalog(market: PlatformClient, store: OpenStore) {
  step('… reads its catalog');
  const { storeId } = store;
  const catalog = await call(
    () =>
      market.GET('/v1/marketfront/stores/{storeId}/catalogset', { params: { path: { storeId } } }),
    200,
    {
      answer: (body, headers) =>
        `ETag ${headers.get('etag')}, ${Object.values(body.items)
          .map((item) => `${item.name} ${money(item.basePrice)}`)
          .join(', ')}`,
    },
  );
  check(
    catalog.catalogSetId === store.catalogSetId,
    `CatalogSet ${store.catalogSetId}`,
    catalog.catalogSetId,
  );
  return catalog;
}
