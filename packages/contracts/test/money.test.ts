import {
  currencyExponent,
  fromMinorUnits,
  isKnownCurrency,
  storeProfileInput,
  toMinorUnits,
  toScaledInteger,
} from '@pcp/contracts';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** ISO's own list, as shipped in `currency-codes`: each code and its minor unit (N.A. for none). */
function isoListOne(): Map<string, string> {
  const packageJson = createRequire(import.meta.url).resolve('currency-codes/package.json');
  const xml = readFileSync(join(dirname(packageJson), 'iso-4217-list-one.xml'), 'utf8');
  const entries = xml.matchAll(/<Ccy>([A-Z]{3})<\/Ccy>[\s\S]*?<CcyMnrUnts>([^<]+)<\/CcyMnrUnts>/g);
  return new Map([...entries].map(([, code, minorUnit]) => [code!, minorUnit!]));
}

describe('currencyExponent', () => {
  // HUF, IDR, COP and IQD are where the runtime's locale data disagrees with ISO 4217.
  it.each([
    ['USD', 2],
    ['EUR', 2],
    ['JPY', 0],
    ['KWD', 3],
    ['HUF', 2],
    ['IDR', 2],
    ['COP', 2],
    ['IQD', 3],
    ['CLF', 4],
  ])('%s has %i fraction digits, as ISO 4217 says', (currency, digits) => {
    expect(currencyExponent(currency)).toBe(digits);
  });
});

describe('isKnownCurrency', () => {
  it('knows ISO 4217 codes, in upper case only', () => {
    expect(isKnownCurrency('USD')).toBe(true);
    expect(isKnownCurrency('IQD')).toBe(true);
    expect(isKnownCurrency('usd')).toBe(false);
    expect(isKnownCurrency('ABC')).toBe(false);
  });

  it('refuses codes without a minor unit (gold, testing, no currency)', () => {
    for (const code of ['XAU', 'XAG', 'XTS', 'XXX', 'XDR']) {
      expect(isKnownCurrency(code)).toBe(false);
    }
  });

  it("agrees with ISO's list: every code with a minor unit, none without", () => {
    const list = isoListOne();
    expect(list.size).toBeGreaterThan(170);
    for (const [code, minorUnit] of list) {
      expect(isKnownCurrency(code), code).toBe(minorUnit !== 'N.A.');
      if (minorUnit !== 'N.A.') expect(currencyExponent(code), code).toBe(Number(minorUnit));
    }
  });
});

describe('amounts in a currency the runtime gets wrong', () => {
  it('accepts two decimals of HUF and refuses three, in a store profile', () => {
    const profile = (fee: number) =>
      storeProfileInput.safeParse({
        name: 'Budapest Büfé',
        phone: '+3612345678',
        timezone: 'Europe/Budapest',
        currency: 'HUF',
        address: {
          address1: 'Váci utca 1',
          city: 'Budapest',
          state: 'Budapest',
          postalCode: '1052',
          country: 'HU',
          latitude: 47.49,
          longitude: 19.05,
        },
        fulfillmentTypes: ['DELIVERY_BY_MERCHANT'],
        availability: [],
        delivery: { radiusMeters: 3000, fee, minimumOrder: 0, etaMinutes: 30 },
        taxRate: 0.27,
      });
    expect(profile(12.34).success).toBe(true);
    const refused = profile(12.345);
    expect(refused.success).toBe(false);
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({
        path: ['delivery', 'fee'],
        params: { code: 'PRECISION_EXCEEDED' },
      }),
    ]);
    expect(toMinorUnits(12.34, 'HUF')).toBe(1234);
    expect(fromMinorUnits(1234, 'IQD')).toBe(1.234);
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
