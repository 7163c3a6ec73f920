/** Card numbers with a scripted outcome; any other Luhn-valid number is authorized. */
export const testCards = {
  success: '4242424242424242',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  incorrectCvc: '4000000000000127',
  expiredCard: '4000000000000069',
  stolenCard: '4000000000009979',
  processingError: '4000000000000119',
  /** The authorization never answers. */
  hang: '4000000000007775',
} as const;

/** What authorizing a card does. */
export type CardBehaviour =
  | { readonly kind: 'authorize' }
  | { readonly kind: 'decline'; readonly code: string }
  | { readonly kind: 'hang' };

const declineCodes: ReadonlyMap<string, string> = new Map([
  [testCards.declined, 'card_declined'],
  [testCards.insufficientFunds, 'insufficient_funds'],
  [testCards.incorrectCvc, 'incorrect_cvc'],
  [testCards.expiredCard, 'expired_card'],
  [testCards.stolenCard, 'stolen_card'],
  [testCards.processingError, 'processing_error'],
]);

/** The scripted behaviour of a card number. */
export function cardBehaviour(number: string): CardBehaviour {
  if (number === testCards.hang) return { kind: 'hang' };
  const code = declineCodes.get(number);
  return code ? { kind: 'decline', code } : { kind: 'authorize' };
}

/** The Luhn (mod 10) check every card number carries. */
export function passesLuhn(number: string): boolean {
  let sum = 0;
  for (let i = 0; i < number.length; i++) {
    let digit = Number(number[number.length - 1 - i]);
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}
