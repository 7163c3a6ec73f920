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

/** An order that names a charge as its payment. */
const chargedOrder = z.object({
  orderId: guid,
  state: z.enum(['open', 'completed', 'cancelled']),
  totalMinor: z.number().int().nonnegative(),
  currency: z.string(),
});

/**
 * For each charge asked about: the orders that name it (at most one, unless something is
 * wrong; a few are shown then), and the place attempt of its order id, while ordering still
 * keeps it (`answered`: it has a final answer; `expiresAt`: until then an unanswered one may
 * still use the charge, after it the attempt is settled and its charge released).
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
