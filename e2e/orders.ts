/** Order bodies and buyers shared by the place tests. */
import { randomUUID } from 'node:crypto';
import type { cartTestCatalog } from '../test-support/cart-catalog.js';
import { call } from './http.js';

/**
 * Ten sodas (19.90) of the cart test catalog, picked up ASAP with a 2.00 tip: 23.64 with
 * the 8.75% tax, paid with the card `paymentId`.
 */
export const sodaOrder = (
  ids: ReturnType<typeof cartTestCatalog>['ids'],
  storeId: string,
  paymentId: string,
  overrides: Record<string, unknown> = {},
) => ({
  cart: {
    catalogSetId: ids.catalogSetId,
    storeId,
    lineItems: [{ itemId: ids.soda, lineItemId: randomUUID(), quantity: 10 }],
  },
  fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
  client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
  paymentType: 'CARD',
  paymentId,
  tip: 2,
  amounts: { total: 23.64 },
  ...overrides,
});

/** A new end user with `cardNumber` vaulted: its id and the card's paymentId. */
export async function newBuyer(baseUrl: string, apiKey: string, cardNumber: string) {
  const endUser = `buyer-${randomUUID()}`;
  const vaulted = await call(baseUrl, 'POST', '/v1/marketfront/payments/cards', {
    apiKey,
    headers: { 'x-end-user-id': endUser },
    body: { cardNumber, expMonth: 12, expYear: 2035, cvc: '123', cardholderName: 'Pat Doe' },
  });
  if (vaulted.status >= 300) throw new Error(`vaulting answered ${vaulted.status}`);
  return { endUser, paymentId: vaulted.body.paymentId as string };
}
