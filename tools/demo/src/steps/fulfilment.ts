// The store moves the order as its kitchen works; each change reaches the distribution
// partner as a signed webhook; then it reads the finished order.
import type { PlatformClient } from '@pcp/client';
import { call } from '../exchanges.js';
import { check, dim, json, out, short, step, yellow } from '../output.js';
import { nextWebhook, type WebhookReceiver } from '../partner-servers.js';
import { orderPrinting } from './order.js';

/** The webhooks the order's moves send, in order (version n for the n-th). */
const expectedWebhooks = [
  { type: 'order.created', status: 'pending', previousStatus: null },
  { type: 'order.status_changed', status: 'confirmed', previousStatus: 'pending' },
  { type: 'order.status_changed', status: 'preparing', previousStatus: 'confirmed' },
  { type: 'order.status_changed', status: 'ready', previousStatus: 'preparing' },
  { type: 'order.status_changed', status: 'completed', previousStatus: 'ready' },
] as const;

interface Parties {
  commerce: PlatformClient;
  market: PlatformClient;
  receiver: WebhookReceiver;
  storeId: string;
  orderId: string;
}

/** The `index`-th webhook (0 based) has arrived, verified, and says what it should. */
async function receiveWebhook({ receiver, orderId, storeId }: Parties, index: number) {
  const expected = { ...expectedWebhooks[index]!, version: index + 1 };
  const { id, event } = await nextWebhook(receiver, index, expected.status);
  const { data } = event;
  out(
    `   ${yellow('⇐')} webhook ${event.type}  ${data.previousStatus ?? '∅'} → ${data.status}, ` +
      `v${data.version}  ${dim(`webhook-id ${short(id)}, signature verified`)}`,
  );
  const got = { type: event.type, ...data };
  check(
    got.type === expected.type &&
      got.orderId === orderId &&
      got.storeId === storeId &&
      got.status === expected.status &&
      got.previousStatus === expected.previousStatus &&
      got.version === expected.version,
    `webhook ${json({ ...expected, orderId })}`,
    json(got),
  );
}

export async function fulfil(parties: Parties): Promise<void> {
  const { commerce, market, receiver, orderId } = parties;
  await receiveWebhook(parties, 0);

  step('The commerce partner moves the order as its kitchen works; each change is a webhook');
  const readyAt = new Date(Date.now() + 15 * 60_000).toISOString();
  const moves = [
    { status: 'confirmed', estimatedReadyAt: readyAt },
    { status: 'preparing' },
    { status: 'ready' },
    { state: 'completed' },
  ] as const;
  for (const [index, move] of moves.entries()) {
    const moved = await call(
      () =>
        commerce.POST('/v1/commerce/orders/{orderId}/status', {
          params: { path: { orderId } },
          body: move,
        }),
      200,
      {
        note: Object.entries(move)
          .map(([key, value]) => `${key}=${value}`)
          .join(' '),
        answer: (order) => `${order.state}/${order.status} v${order.version}`,
      },
    );
    const expected = expectedWebhooks[index + 1]!;
    check(
      moved.status === expected.status && moved.version === index + 2,
      `${expected.status}, version ${index + 2}`,
      `${moved.status}, version ${moved.version}`,
    );
    await receiveWebhook(parties, index + 1);
  }

  step('The distribution partner reads the finished order');
  const finished = await call(
    () => market.GET('/v1/marketfront/orders/{orderId}', { params: { path: { orderId } } }),
    200,
    orderPrinting,
  );
  check(
    finished.state === 'completed' && finished.version === 5,
    'completed, version 5',
    `${finished.state}, version ${finished.version}`,
  );
  check(receiver.rejected.length === 0, 'every webhook verified', receiver.rejected[0]);
}
