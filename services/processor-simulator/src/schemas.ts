import { z } from 'zod';

const amount = z.int().min(1).max(1e12);
/** The caller's own name for an authorization, to find it again by. */
const reference = z.string().regex(/^[\x20-\x7e]{1,255}$/);

export const tokenBody = z.strictObject({
  number: z.string().regex(/^\d{12,19}$/),
  expMonth: z.int().min(1).max(12),
  expYear: z.int().min(2000).max(2100),
  cvc: z.string().regex(/^\d{3,4}$/),
  name: z.string().max(200).optional(),
  postalCode: z.string().max(32).optional(),
});

export const authorizationBody = z.strictObject({
  token: z.string().min(1).max(255),
  amount,
  currency: z.string().regex(/^[A-Z]{3}$/),
  reference: reference.optional(),
});

export const captureBody = z.strictObject({ amount: amount.optional() });

export const voidBody = z.strictObject({});

export const refundBody = z.strictObject({
  authorization: z.string().min(1).max(255),
  amount,
});

export const chargeStatuses = [
  'authorized',
  'declined',
  'captured',
  'voided',
  'partially_refunded',
  'refunded',
] as const;

export const chargesQuery = z.object({
  status: z
    .string()
    .transform((list) => list.split(',').filter((status) => status.length > 0))
    .pipe(z.array(z.enum(chargeStatuses)))
    .optional(),
});

export const authorizationsQuery = z.strictObject({ reference });

export type TokenBody = z.infer<typeof tokenBody>;
export type AuthorizationBody = z.infer<typeof authorizationBody>;
export type RefundBody = z.infer<typeof refundBody>;
