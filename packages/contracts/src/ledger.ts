import { z } from 'zod';
import { dateTime, guid } from './common.js';

/** Charges one reconciliation request asks about at most (a reply stays far below 1 MB). */
export const maxChargesPerReconciliation = 500;

/** What payments' reconciler asks ordering: who holds each of these charges? */
export const chargeOwnersInput = z.object({
  charges: z
    .array(z.object({ chargeId: guid, orderId: guid.nullable() }))
    .min(1)
    .max(maxChargesPerReconciliation),
});

/**
 * An order that names a charge as its payment, and the refund its cancel owes: `none` (never
 * cancelled, or cancelled by code that refunded before commit), `owed` since `refundOwedSince`
 * (ordering's refund sweeper settles it), `settled` (payments answered the refund).
 */
const chargedOrder = z.object({
  orderId: guid,
  state: z.enum(['open', 'completed', 'cancelled']),
  totalMinor: z.number().int().nonnegative(),
  currency: z.string(),
  refund: z.enum(['none', 'owed', 'settled']),
  refundOwedSince: dateTime.nullable(),
});

/**
 * For each charge asked about, read in one snapshot of ordering's database: the orders that
 * name it (at most one, unless something is wrong; a few are shown then), and the place
 * attempt of its order id, while ordering still keeps it (`answered`: it has a final answer,
 * and then its order exists in the same snapshot if it placed one; `expiresAt`: until then an
 * unanswered one may still use the charge, after it the attempt is settled and its charge
 * released). An answered attempt is forgotten after its retention, an unanswered one never.
 */
export const chargeOwners = z.object({
  owners: z
    .array(
      z.object({
        chargeId: guid,
        orders: z.array(chargedOrder).max(5),
        attempt: z
          .object({
            orderId: guid,
            step: z.string(),
            answered: z.boolean(),
            expiresAt: dateTime,
          })
          .nullable(),
      }),
    )
    .max(maxChargesPerReconciliation),
});
export type ChargeOwners = z.infer<typeof chargeOwners>;
