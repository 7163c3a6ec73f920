import { insertOrder, type OrderDetails, type OrderingDatabase } from '@pcp/ordering';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';

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

export interface SeedOrderOptions {
  mode?: Mode;
  status?: 'pending' | 'confirmed';
  store?: string;
  storePartner?: { partnerId: string };
  placer?: { partnerId: string };
  endUserId?: string;
  createdAt?: Date;
  charge?: { chargeId: string; paymentId: string };
  orderId?: string;
  /** The order's acceptance deadline (none unless given). */
  acceptBy?: Date;
}

/**
 * An order as place leaves it (place itself is tested on its own), with its order.created
 * in the outbox, written straight to the ordering database.
 */
export async function seedPlacedOrder(
  db: Kysely<OrderingDatabase>,
  prefix: string,
  options: SeedOrderOptions & {
    store: string;
    storePartner: { partnerId: string };
    placer: { partnerId: string };
  },
): Promise<string> {
  const orderId = options.orderId ?? randomUUID();
  const mode = options.mode ?? 'PICKUP';
  const { store } = options;
  const createdAt = options.createdAt ?? new Date();
  const payment = options.charge
    ? { paymentId: options.charge.paymentId, brand: 'VISA', last4: '4242' }
    : null;
  await db.transaction().execute((trx) =>
    insertOrder(
      trx,
      {
        order_id: orderId,
        partner_id: options.placer.partnerId,
        end_user_id: options.endUserId ?? 'diner-1',
        store_id: store,
        store_partner_id: options.storePartner.partnerId,
        // The placers of these seeds are live partners.
        mode: 'live',
        fulfillment_mode: mode,
        state: 'open',
        status: options.status ?? 'pending',
        version: 1,
        details: orderDetails(store, mode, payment),
        charge_id: options.charge?.chargeId ?? null,
        total_minor: TOTAL_MINOR,
        currency: 'USD',
        estimated_ready_at: null,
        cancel_reason: null,
        cancelled_by: null,
        store_deleted_at: null,
        accept_by: options.acceptBy ?? null,
        created_at: createdAt,
        updated_at: createdAt,
      },
      prefix,
    ),
  );
  return orderId;
}
