import { z } from 'zod';
import { dateTime, guid } from './common.js';
import { vaultedCardExample } from './examples.js';
import { partnerMode } from './sandbox.js';

/**
 * A card to vault (docs/guide/payments.md#cards). Only the shape is checked here; the card rules
 * (Luhn, network, expiry, CVC length) are the payments service's, answered as CARD_INVALID with
 * pointers. The number and CVC are strings: leading zeros matter, and neither is a number.
 */
export const vaultCardInput = z
  .object({
    cardNumber: z.string().max(64),
    expMonth: z.number().int(),
    expYear: z.number().int(),
    cvc: z.string().max(8),
    cardholderName: z.string().trim().min(1).max(100),
    billingPostalCode: z.string().trim().min(1).max(16).optional(),
  })
  .meta({
    examples: [
      {
        cardNumber: '4242424242424242',
        expMonth: 12,
        expYear: 2030,
        cvc: '123',
        cardholderName: 'Dana Reyes',
        billingPostalCode: '60611',
      },
    ],
  });
export type VaultCardInput = z.infer<typeof vaultCardInput>;

/** A vaulted card as partners see it: never its number or CVC. */
export const vaultedCard = z
  .object({
    paymentId: guid,
    /** The card network, e.g. VISA, MASTERCARD, AMERICAN_EXPRESS. */
    brand: z.string(),
    last4: z.string().regex(/^\d{4}$/),
    expMonth: z.number().int().min(1).max(12),
    expYear: z.number().int(),
    createdAt: dateTime,
  })
  .meta({ examples: [vaultedCardExample] });
export type VaultedCard = z.infer<typeof vaultedCard>;

/** An end user holds at most this many cards at once. */
export const maxCardsPerEndUser = 25;

export const vaultedCardList = z
  .object({ cards: z.array(vaultedCard).max(maxCardsPerEndUser) })
  .meta({ examples: [{ cards: [vaultedCardExample] }] });

/** The lifecycle of one charge: an authorization hold, then capture or void, then refunds. */
export const chargeStatus = z.enum([
  'authorizing',
  'authorized',
  'declined',
  'captured',
  'voided',
  'partially_refunded',
  'refunded',
]);
export type ChargeStatus = z.infer<typeof chargeStatus>;

/** Money inside the platform: integer minor units of an ISO 4217 currency. */
const minorUnits = z.number().int().min(1).max(1_000_000_000_000);
const currencyCode = z.string().regex(/^[A-Z]{3}$/);

/**
 * Hold `amount` on a vaulted card of the calling end user for one order. The order id is the
 * place attempt's (new for every life of an Idempotency-Key): an order has at most one
 * charge, so asking again never charges twice and resumes an attempt whose outcome was
 * unknown; a charge never serves another order.
 */
export const authorizeInput = z.object({
  orderId: guid,
  paymentId: guid,
  amount: minorUnits,
  currency: currencyCode,
  /**
   * The order's mode (docs/guide/payments.md#test-mode-payments), kept with the charge: a test
   * charge, and everything done with it later (capture, void, refund, also from background
   * jobs), goes to the sandbox processor, never a real one.
   */
  mode: partnerMode,
});

export const charge = z.object({
  chargeId: guid,
  /** The order (place attempt) it was authorized for; null on charges from before that rule. */
  orderId: guid.nullable(),
  paymentId: guid,
  status: chargeStatus,
  amount: z.number().int(),
  currency: currencyCode,
  capturedAmount: z.number().int().nonnegative(),
  refundedAmount: z.number().int().nonnegative(),
  brand: z.string(),
  last4: z.string(),
});
export type Charge = z.infer<typeof charge>;

/** Capture an authorized charge, in full or in part (default: the authorized amount). */
export const captureInput = z.object({ chargeId: guid, amount: minorUnits.optional() });

/**
 * Release whatever an order's attempt holds, whatever became of it: an authorization is
 * voided (one whose outcome was unknown is asked of the processor first), a capture refunded,
 * anything else left as it is. The answer is the charge as it ends, or null when the order
 * never had one.
 */
export const releaseInput = z.object({ orderId: guid });

/**
 * Return captured money; the same `idempotencyKey` for a charge refunds once. Without `amount`
 * it refunds whatever of the capture is not refunded or being refunded under another key (a
 * cancel's refund): a charge with nothing left to refund answers as it is, never a refusal.
 */
export const refundInput = z.object({
  chargeId: guid,
  amount: minorUnits.optional(),
  idempotencyKey: z.string().min(1).max(255),
});
