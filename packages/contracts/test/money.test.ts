import { currencyExponent, fromMinorUnits, toMinorUnits, toScaledInteger } from '@pcp/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe('currencyExponent', () => {
  it.each([
    ['USD', 2],
    ['EUR', 2],
    ['JPY', 0],
    ['KWD', 3],
  ])('%s has %i fraction digits', (currency, digits) => {
    expect(currencyExponent(currency)).toBe(digits);
    // A second call is served from the cache and agrees.
    expect(currencyExponent(currency)).toBe(digits);
  });
});

describe('toScaledInteger', () => {
  it('scales decimal numbers exactly', () => {
    expect(toScaledInteger(19.99, 2)).toBe(1999);
    expect(toScaledInteger(12.5, 2)).toBe(1250);
    expect(toScaledInteger(0, 2)).toBe(0);
    expect(toScaledInteger(300, 0)).toBe(300);
    expect(toScaledInteger(1.125, 3)).toBe(1125);
    expect(toScaledInteger(0.0875, 6)).toBe(87_500);
    expect(toScaledInteger(1e-7, 7)).toBe(1);
    expect(toScaledInteger(1.5e-6, 7)).toBe(15);
    // Trailing zeros of the fraction do not count against the precision.
    expect(toScaledInteger(1.1, 1)).toBe(11);
  });

  it('keeps the sign of negative values', () => {
    expect(toScaledInteger(-19.99, 2)).toBe(-1999);
    expect(toScaledInteger(-12.5, 2)).toBe(-1250);
    expect(toScaledInteger(-3, 0)).toBe(-3);
    expect(toScaledInteger(-0.001, 2)).toBeNull();
  });

  it('refuses more fraction digits than allowed', () => {
    const sum = 0.1 + 0.2;
    expect(sum).toBe(0.30000000000000004);
    expect(toScaledInteger(sum, 2)).toBeNull();
    expect(toScaledInteger(19.999, 2)).toBeNull();
    expect(toScaledInteger(1.5, 0)).toBeNull();
    expect(toScaledInteger(1e-7, 2)).toBeNull();
    expect(toScaledInteger(1e-7, 6)).toBeNull();
  });

  it('refuses values outside the safe integer range and non-finite values', () => {
    expect(toScaledInteger(1e21, 2)).toBeNull();
    expect(toScaledInteger(1e21, 0)).toBeNull();
    expect(toScaledInteger(Number.MAX_SAFE_INTEGER, 0)).toBe(Number.MAX_SAFE_INTEGER);
    expect(toScaledInteger(Number.MAX_SAFE_INTEGER, 2)).toBeNull();
    expect(toScaledInteger(Number.POSITIVE_INFINITY, 2)).toBeNull();
    expect(toScaledInteger(Number.NaN, 2)).toBeNull();
  });

  it('round-trips every integer minor amount through its major-unit number', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.constantFrom(0, 2, 3),
        (minor, exponent) => {
          expect(toScaledInteger(minor / 10 ** exponent, exponent)).toBe(minor);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('toMinorUnits / fromMinorUnits', () => {
  it('convert with the currency exponent', () => {
    expect(toMinorUnits(19.99, 'USD')).toBe(1999);
    expect(toMinorUnits(300, 'JPY')).toBe(300);
    expect(toMinorUnits(1.5, 'JPY')).toBeNull();
    expect(toMinorUnits(1.125, 'KWD')).toBe(1125);
    expect(toMinorUnits(1.1255, 'KWD')).toBeNull();
    expect(toMinorUnits(0.1 + 0.2, 'USD')).toBeNull();
    expect(toMinorUnits(1e21, 'USD')).toBeNull();
    expect(fromMinorUnits(1999, 'USD')).toBe(19.99);
    expect(fromMinorUnits(300, 'JPY')).toBe(300);
    expect(fromMinorUnits(1125, 'KWD')).toBe(1.125);
  });

  it('fromMinorUnits round-trips through toMinorUnits for USD, JPY and KWD', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.constantFrom('USD', 'JPY', 'KWD'),
        (minor, currency) => {
          expect(toMinorUnits(fromMinorUnits(minor, currency), currency)).toBe(minor);
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
