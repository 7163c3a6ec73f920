// The sandbox only (`--sandbox`): the distribution partner also orders at one of the
// platform's fixture stores (docs/guide/sandbox.md#fixture-stores), which nobody runs: the platform's
// fixture kitchen confirms the order on its own, about two seconds after it was placed.
import { fixtureStoreOrder, placeOrder, type Order, type PlatformClient } from '@pcp/client';
import { call, exchange, type Printing } from '../exchanges.js';
import { check, dim, money, note, short, step } from '../output.js';

/** How long the kitchen may take to confirm (its first step is due after 2 s). */
const CONFIRM_TIMEOUT_MS = 15_000;
const POLL_MS = 250;

const printing: Printing<Order> = {
  answer: (order) =>
    order?.orderId
      ? `orderId ${short(order.orderId)}, ${order.state}/${order.status} v${order.version}, ` +
        `total ${money(order.amounts?.total)} ${order.amounts?.currency}`
      : '',
};

/** The end customer's vaulted card (`paymentId`) pays for it. */
export async function orderAtFixtureStore(
  market: PlatformClient,
  endUserId: string,
  paymentId: string,
) {
  step('The distribution partner orders at a fixture store; its kitchen confirms the order');
  const { storeId, body } = await exchange(() =>
    fixtureStoreOrder(market, { endUserId, paymentId }),
  );
  note(
    dim(`fixture store ${storeId}: the first item validate lets through, pickup, the same card`),
  );
  const { order } = await exchange(() => placeOrder(market, { body, endUserId }), {
    ...printing,
    note: `X-End-User-Id=${endUserId} amounts.total=${money(body.amounts.total)}`,
  });
  check(order.status === 'pending', 'status pending', order.status);

  // Polled quietly (a poll is only recorded); the answer that shows the move is printed.
  const { orderId } = order;
  const deadline = Date.now() + CONFIRM_TIMEOUT_MS;
  for (;;) {
    const { data } = await market.GET('/v1/marketfront/orders/{orderId}', {
      params: { path: { orderId } },
    });
    if (data?.status !== 'pending' || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const seen = await call(
    () => market.GET('/v1/marketfront/orders/{orderId}', { params: { path: { orderId } } }),
    200,
    printing,
  );
  check(
    seen.status === 'confirmed' && seen.version === 2,
    `confirmed by the fixture kitchen (version 2) within ${CONFIRM_TIMEOUT_MS / 1000} s`,
    `${seen.status}, version ${seen.version}`,
  );
}
