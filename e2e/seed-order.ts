import { insertOrder, type OrderingDatabase } from '@pcp/ordering';
import { orderDetails, TOTAL_MINOR, type Mode } from '@pcp/testing/order-details';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';

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
