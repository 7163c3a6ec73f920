// The store runs out of an item: it denies a pending order with it, which makes the item
// unavailable until the end of the store's local day, and the cart helpers refuse it at once
// (docs/guide/orders.md#denying-an-order).
import { placeOrder, type PlaceOrderInput, type PlatformClient } from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { call, exchange } from '../exchanges.js';
import { check, dim, json, out, short, step, yellow } from '../output.js';
import { nextWebhook, type WebhookReceiver } from '../partner-servers.js';
import { orderPrinting } from './order.js';
import type { OpenStore } from './store.js';

interface Parties {
  commerce: PlatformClient;
  market: PlatformClient;
  receiver: WebhookReceiver;
  store: OpenStore;
  /** The first order's place, sent again under a new key for a second order. */
  order: Pick<PlaceOrderInput, 'body' | 'endUserId'>;
  /** The item that runs out: a line of that cart. */
  item: { itemId: string; name: string };
}

const CANCEL_REASON = 'The sodas ran out';
/** How long the store event that carries the new override may take to reach ordering. */
const EVENT_WAIT_MS = 3_000;

/** The webhook after the `index` first ones: `type` of `orderId`, with its data checked. */
async function receive(
  receiver: WebhookReceiver,
  index: number,
  expected: { type: string; orderId: string; status: string; cancelledBy: string | null },
) {
  const { id, event } = await nextWebhook(receiver, index, `${expected.type} ${expected.status}`);
  const { data } = event;
  out(
    `   ${yellow('⇐')} webhook ${event.type}  ${data.state}/${data.status} v${data.version}` +
      (data.cancelledBy ? `, cancelledBy ${data.cancelledBy}: ${data.cancelReason}` : '') +
      `  ${dim(`webhook-id ${short(id)}, signature verified`)}`,
  );
  check(
    event.type === expected.type &&
      data.orderId === expected.orderId &&
      data.status === expected.status &&
      data.cancelledBy === expected.cancelledBy &&
      // Placement sets the estimate (docs/guide/orders.md#estimated-ready-time).
      (event.type !== 'order.created' || data.estimatedReadyAt !== null),
    `webhook ${json(expected)}${expected.type === 'order.created' ? ' with its estimatedReadyAt' : ''}`,
    json({ type: event.type, ...data }),
  );
  return event;
}

export async function denyForAnItem(parties: Parties, webhooksSoFar: number): Promise<void> {
  const { commerce, market, receiver, store, order, item } = parties;

  step('The distribution partner places a second order, the same cart under a new key');
  const placed = await exchange(() => placeOrder(market, order), {
    ...orderPrinting,
    note: `X-End-User-Id=${order.endUserId}`,
  });
  const { orderId, acceptBy } = placed.order;
  check(
    placed.order.status === 'pending' && acceptBy !== null,
    'a pending order with its acceptBy (the store’s acceptance window)',
    () => json({ status: placed.order.status, acceptBy }),
  );
  out(`   ${dim(`the store must accept it by ${acceptBy}, or the platform cancels it`)}`);
  await receive(receiver, webhooksSoFar, {
    type: 'order.created',
    orderId,
    status: 'pending',
    cancelledBy: null,
  });

  step(`The commerce partner denies it: ${item.name} ran out for today`);
  const denied = await call(
    () =>
      commerce.POST('/v1/commerce/orders/{orderId}/status', {
        params: { path: { orderId } },
        body: {
          state: 'cancelled',
          cancelReason: CANCEL_REASON,
          unavailableItemIds: [item.itemId],
        },
      }),
    200,
    {
      note: `state=cancelled cancelReason="${CANCEL_REASON}" unavailableItemIds=[${short(item.itemId)}]`,
      answer: (body) =>
        `${body.state}/${body.status} v${body.version}, cancelledBy ${body.cancelledBy}`,
    },
  );
  check(
    denied.state === 'cancelled' &&
      denied.cancelledBy === 'store' &&
      denied.cancelReason === CANCEL_REASON,
    `cancelled by the store: "${CANCEL_REASON}"`,
    () =>
      json({ state: denied.state, cancelledBy: denied.cancelledBy, reason: denied.cancelReason }),
  );
  await receive(receiver, webhooksSoFar + 1, {
    type: 'order.cancelled',
    orderId,
    status: denied.status,
    cancelledBy: 'store',
  });

  step(`… and the cart helpers refuse ${item.name} for the rest of the store’s day`);
  // The override reaches every ordering replica as a store event, a moment after the deny
  // committed: a cart priced in that moment may still take the item.
  const addItem = () =>
    market.POST('/v1/marketfront/carts/add', {
      body: {
        item: { itemId: item.itemId, lineItemId: randomUUID(), quantity: 1 },
        cart: null,
        catalogSetId: store.catalogSetId,
        storeId: store.storeId,
      },
    });
  const deadline = Date.now() + EVENT_WAIT_MS;
  let refused = await exchange(addItem, { note: `1× ${item.name}, a new cart` });
  while (refused.response.ok && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    refused = await exchange(addItem, { note: 'again, once the store event has arrived' });
  }
  const errors = refused.error && 'errors' in refused.error ? (refused.error.errors ?? []) : [];
  check(
    refused.response.status === 400 &&
      refused.error?.errorCode === 'CART_INVALID' &&
      errors.some((error) => error.code === 'ITEM_UNAVAILABLE'),
    `400 CART_INVALID with ITEM_UNAVAILABLE for ${item.name} within ${EVENT_WAIT_MS / 1000} s`,
    () => `HTTP ${refused.response.status} ${json(refused.error ?? refused.data)}`,
  );
}
