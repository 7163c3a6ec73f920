import { describe, expect, it } from 'vitest';
import { checkCard, isExpired } from '../../src/domain/card-rules.js';

const now = new Date('2026-11-23T10:00:00Z');
const card = {
  cardNumber: '4242 4242 4242 4242',
  expMonth: 12,
  expYear: 2030,
  cvc: '123',
  cardholderName: 'Ada Lovelace',
};

function pointers(result: ReturnType<typeof checkCard>): (string | null)[] {
  return result.ok ? [] : result.errors.map((error) => error.pointer);
}

describe('checkCard', () => {
  it('accepts a valid card, with spaces or hyphens between digits, and names its network', () => {
    const result = checkCard({ ...card, cardNumber: '4242-4242-4242-4242' }, now);
    expect(result).toEqual({
      ok: true,
      card: { number: '4242424242424242', brand: 'VISA', last4: '4242' },
    });
    const amex = checkCard({ ...card, cardNumber: '378282246310005', cvc: '1234' }, now);
    expect(amex.ok && amex.card.brand).toBe('AMERICAN_EXPRESS');
  });

  it('refuses a number failing Luhn, of the wrong length or holding letters, at /cardNumber', () => {
    for (const cardNumber of [
      '4242424242424241',
      '42424242',
      '4242x24242424242',
      '',
      '4'.repeat(25),
    ]) {
      expect(pointers(checkCard({ ...card, cardNumber }, now))).toEqual(['/cardNumber']);
    }
  });

  it('never repeats the number or the CVC in a message', () => {
    const result = checkCard({ ...card, cardNumber: '4242424242424241', cvc: '98' }, now);
    expect(result.ok).toBe(false);
    const text = JSON.stringify(result);
    expect(text).not.toContain('4242424242424241');
    expect(text).not.toContain('"98"');
  });

  it('refuses an expired card and a month out of range, and takes the expiry month as valid', () => {
    expect(pointers(checkCard({ ...card, expMonth: 10, expYear: 2026 }, now))).toEqual([
      '/expYear',
    ]);
    expect(pointers(checkCard({ ...card, expMonth: 13 }, now))).toEqual(['/expMonth']);
    expect(pointers(checkCard({ ...card, expMonth: 0 }, now))).toEqual(['/expMonth']);
    expect(pointers(checkCard({ ...card, expYear: 26 }, now))).toEqual(['/expYear']);
    expect(pointers(checkCard({ ...card, expYear: 2099 }, now))).toEqual(['/expYear']);
    expect(checkCard({ ...card, expMonth: 11, expYear: 2026 }, now).ok).toBe(true);
  });

  it('wants a CVC as long as the network’s, digits only', () => {
    expect(pointers(checkCard({ ...card, cvc: '1234' }, now))).toEqual(['/cvc']);
    expect(pointers(checkCard({ ...card, cvc: '12a' }, now))).toEqual(['/cvc']);
    expect(
      pointers(checkCard({ ...card, cardNumber: '378282246310005', cvc: '123' }, now)),
    ).toEqual(['/cvc']);
  });

  it('reports every problem at once', () => {
    const result = checkCard(
      { ...card, cardNumber: '1234', expMonth: 2, expYear: 2020, cvc: '' },
      now,
    );
    expect(pointers(result)).toEqual(['/cardNumber', '/expYear', '/cvc']);
  });
});

describe('isExpired', () => {
  it('keeps a card valid until its expiry month has ended in the last time zone', () => {
    expect(isExpired(11, 2026, new Date('2026-11-30T23:59:59Z'))).toBe(false);
    expect(isExpired(11, 2026, new Date('2026-12-01T11:59:59Z'))).toBe(false);
    expect(isExpired(11, 2026, new Date('2026-12-01T12:00:00Z'))).toBe(true);
    expect(isExpired(12, 2026, new Date('2027-01-01T12:00:00Z'))).toBe(true);
  });
});
