import type { OrderError, VaultCardInput } from '@pcp/contracts';
import validator from 'card-validator';

export interface CheckedCard {
  /** Digits only. */
  readonly number: string;
  /** The network, e.g. VISA, AMERICAN_EXPRESS. */
  readonly brand: string;
  readonly last4: string;
}

/** Cards further out than this are typos, not cards. */
const MAX_YEARS_AHEAD = 20;

/**
 * The card rules of docs/guide/payments.md#cards: a number of 12 to 19 digits (spaces and hyphens
 * allowed between them) that passes Luhn and belongs to a known network at one of its lengths, an
 * expiry that has not passed, a CVC as long as the network's. Messages never repeat the number or
 * the CVC.
 */
export function checkCard(
  input: VaultCardInput,
  now: Date,
): { ok: true; card: CheckedCard } | { ok: false; errors: OrderError[] } {
  const errors: OrderError[] = [];
  const invalid = (pointer: string, message: string) =>
    errors.push({ code: 'CARD_INVALID', message, pointer });

  const number = input.cardNumber.replace(/[\s-]/g, '');
  const verdict = /^\d{12,19}$/.test(number) ? validator.number(number) : undefined;
  if (!verdict) invalid('/cardNumber', 'The card number must be 12 to 19 digits');
  else if (!verdict.isValid || !verdict.card)
    invalid('/cardNumber', 'The card number is not valid');

  if (input.expMonth < 1 || input.expMonth > 12) {
    invalid('/expMonth', 'The expiry month must be 1 to 12');
  } else if (input.expYear < 1000 || input.expYear > 9999) {
    invalid('/expYear', 'The expiry year must have four digits');
  } else if (isExpired(input.expMonth, input.expYear, now)) {
    invalid('/expYear', 'The card has expired');
  } else if (input.expYear > now.getUTCFullYear() + MAX_YEARS_AHEAD) {
    invalid('/expYear', `The expiry year is more than ${MAX_YEARS_AHEAD} years ahead`);
  }

  const cvcSize = verdict?.card?.code.size;
  if (!/^\d+$/.test(input.cvc) || (cvcSize ? input.cvc.length !== cvcSize : input.cvc.length < 3)) {
    invalid('/cvc', `The CVC must be ${cvcSize ?? '3 or 4'} digits`);
  }

  if (errors.length > 0 || !verdict?.card) return { ok: false, errors };
  return {
    ok: true,
    card: { number, brand: brandName(verdict.card.type), last4: number.slice(-4) },
  };
}

/**
 * A card works through the last day of its expiry month wherever its holder is: it has
 * expired once that month has ended in the last time zone (UTC−12).
 */
export function isExpired(expMonth: number, expYear: number, now: Date): boolean {
  return now.getTime() >= Date.UTC(expYear, expMonth, 1, 12);
}

/** `american-express` → `AMERICAN_EXPRESS`. */
function brandName(type: string): string {
  return type.toUpperCase().replace(/-/g, '_');
}
