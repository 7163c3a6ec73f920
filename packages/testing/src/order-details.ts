import type { OrderDetails } from '@pcp/ordering';
import { randomUUID } from 'node:crypto';

// What the e2e seeds and the benches write as an order's content: place's shape, fixed.

export type Mode = 'PICKUP' | 'DELIVERY_BY_MERCHANT';

/** Ten sodas, 23.64 in all, in minor units. */
export const TOTAL_MINOR = 2_364;

/** An order's content as place records it: ten sodas, 23.64 in all. */
export function orderDetails(
  store: string,
  mode: Mode,
  payment: OrderDetails['payment'],
): OrderDetails {
  return {
    amounts: {
      currency: 'USD',
      subTotal: 19.9,
      fees: 0,
      feesBreakdown: [],
      promotions: 0,
      taxes: 1.74,
      taxesBreakdown: [{ type: 'SALES_TAX', rate: 0.0875, amount: 1.74 }],
      adjustments: 0,
      tip: 2,
      total: 23.64,
    },
    cart: {
      catalogSetId: randomUUID(),
      storeId: store,
      currency: 'USD',
      lineItems: [
        {
          itemId: randomUUID(),
          lineItemId: randomUUID(),
          quantity: 10,
          name: 'Soda',
          unitPrice: 1.99,
          totalPrice: 19.9,
          modifierGroups: [],
        },
      ],
      subTotal: 19.9,
      itemCount: 10,
      errors: [],
    },
    fulfillment: {
      mode,
      scheduleType: 'ASAP',
      scheduledTime: null,
      address:
        mode === 'PICKUP'
          ? null
          : {
              address1: '100 S Wacker Dr',
              address2: null,
              city: 'Chicago',
              state: 'IL',
              postalCode: '60606',
              country: 'US',
              latitude: 41.8789,
              longitude: -87.6359,
            },
      deliveryType: mode === 'PICKUP' ? null : 'DOOR_TO_DOOR',
      instructions: null,
    },
    client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
    customer: null,
    paymentType: payment ? 'CARD' : 'PAY_AT_STORE',
    payment,
    specialInstructions: null,
  };
}
