// The distribution partner vaults the customer's card, validates the order and places it.
import {
  placeOrder,
  type Order,
  type PlaceOrderInput,
  type PlacedOrder,
  type PlatformClient,
} from '@pcp/client';
import { call, exchange, type Printing } from '../exchanges.js';
import { check, dim, json, money, note, short, step } from '../output.js';
import type { buildCart } from './cart.js';

const TEST_CARD = '4242424242424242';
const endCustomer = { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (demo)' };

/** How an order answer prints (place, its replay and the finished order). */
export const orderPrinting: Printing<Order> = {
  answer: (order, headers) =>
    order?.orderId
      ? `orderId ${short(order.orderId)}, ${order.state}/${order.status} v${order.version}, ` +
        `total ${money(order.amounts?.total)}, ${order.payment?.brand} •••• ${order.payment?.last4}` +
        (headers.get('idempotent-replayed')
          ? `, Idempotent-Replayed: ${headers.get('idempotent-replayed')}`
          : '')
      : '',
};

export async function placeTheOrder(
  market: PlatformClient,
  cart: Awaited<ReturnType<typeof buildCart>>,
  endUserId: string,
): Promise<{ placed: PlacedOrder; request: Pick<PlaceOrderInput, 'body' | 'endUserId'> }> {
  step('… vaults the end customer’s test card');
  const card = await call(
    () =>
      market.POST('/v1/marketfront/payments/cards', {
        params: { header: { 'X-End-User-Id': endUserId } },
        body: {
          cardNumber: TEST_CARD,
          expMonth: 12,
          expYear: new Date().getFullYear() + 3,
          cvc: '123',
          cardholderName: 'Pat Demo',
        },
      }),
    201,
    {
      note: `X-End-User-Id=${endUserId} card ${TEST_CARD.replace(/(\d{4})(?=\d)/g, '$1 ')}`,
      answer: (body) => `paymentId ${short(body.paymentId)}, ${body.brand} •••• ${body.last4}`,
    },
  );

  step('… validates the order');
  const order = {
    cart,
    fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' } as const,
    client: endCustomer,
    paymentType: 'CARD' as const,
    paymentId: card.paymentId,
    tip: 2,
  };
  const validated = await call(
    () =>
      market.POST('/v1/marketfront/orders/validate', {
        params: { header: { 'X-End-User-Id': endUserId } },
        body: order,
      }),
    200,
    {
      note: 'pickup ASAP, CARD, tip 2.00',
      answer: ({ isValid, amounts, errors }) =>
        isValid && amounts
          ? `valid: subTotal ${money(amounts.subTotal)} + taxes ${money(amounts.taxes)} + tip ${money(amounts.tip)} = total ${money(amounts.total)} ${amounts.currency}`
          : `not valid: ${json(errors)}`,
    },
  );
  check(validated.isValid && validated.amounts, 'a valid order', () => json(validated.errors));
  // 8.75% of 15.83 is 1.385125: 1.39, half up once on the subTotal.
  check(validated.amounts.total === 19.22, 'total 19.22 (15.83 + 1.39 tax + 2.00 tip)', () =>
    json(validated.amounts),
  );

  step('… places it with the total the customer saw, and retries with the same key');
  const body = { ...order, amounts: { total: validated.amounts.total } };
  const placed = await exchange(() => placeOrder(market, { body, endUserId }), {
    ...orderPrinting,
    note: `X-End-User-Id=${endUserId} amounts.total=${money(body.amounts.total)}`,
  });
  note(dim(`Idempotency-Key ${placed.idempotencyKey}`));
  check(!placed.replayed, 'a new order (not a replay)', 'a replay');
  check(
    placed.order.status === 'pending' && placed.order.version === 1,
    'status pending, version 1',
    `${placed.order.status}, version ${placed.order.version}`,
  );
  check(placed.order.amounts?.total === 19.22, 'total 19.22', placed.order.amounts?.total);
  const replay = await exchange(
    () => placeOrder(market, { body, endUserId, idempotencyKey: placed.idempotencyKey }),
    { ...orderPrinting, note: 'the same Idempotency-Key and body' },
  );
  check(replay.replayed, 'Idempotent-Replayed: true', 'a fresh answer');
  check(
    replay.order.orderId === placed.order.orderId,
    `the same order ${placed.order.orderId}`,
    replay.order.orderId,
  );
  return { placed, request: { body, endUserId } };
}
