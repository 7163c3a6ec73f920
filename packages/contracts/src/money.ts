/**
 * Money helpers (docs/guide/payments.md#money): amounts travel as JSON numbers in major units and
 * live as integer minor units everywhere inside the platform.
 */
import currencyCodes from 'currency-codes';

/**
 * ISO 4217 codes with no minor unit ("N.A." in the standard): precious metals, bond-market
 * units, SDR-like units, the testing code and "no currency". Nothing is priced in them.
 * `currency-codes` gives them 0 digits, as it gives JPY, so they are named here (a test
 * checks this list against the ISO file the package ships).
 */
const withoutMinorUnit = new Set([
  'XAG',
  'XAU',
  'XBA',
  'XBB',
  'XBC',
  'XBD',
  'XDR',
  'XPD',
  'XPT',
  'XSU',
  'XTS',
  'XUA',
  'XXX',
]);

/**
 * Minor-unit digits by ISO 4217 code, from the maintained table (`currency-codes`), read
 * once: money is converted on every priced line. Codes are upper case, exactly.
 */
const minorUnitDigits = new Map(
  currencyCodes.data
    .filter((entry) => !withoutMinorUnit.has(entry.code))
    .map((entry) => [entry.code, entry.digits]),
);

/** True for an ISO 4217 currency code that prices can be given in. */
export function isKnownCurrency(code: string): boolean {
  return minorUnitDigits.has(code);
}

/**
 * Number of fraction digits of an ISO 4217 currency (USD 2, JPY 0, KWD 3, HUF 2, IQD 3),
 * from ISO's table, not the runtime's locale data (which says 0 for HUF, IDR, COP and
 * IQD). Validation refuses unknown codes before amounts are converted; a code saved before
 * it left ISO's table (SLL, HRK) reads with 2.
 */
export function currencyExponent(currency: string): number {
  return minorUnitDigits.get(currency) ?? 2;
}

/**
 * Scale a decimal JSON number to an integer with `digits` fraction digits, exactly: the
 * number's shortest round-trip text is read digit by digit, so no float arithmetic rounds it.
 * Returns null when the value has more fraction digits than allowed or is out of range.
 */
export function toScaledInteger(value: number, digits: number): number | null {
  if (!Number.isFinite(value)) return null;
  const text = Math.abs(value).toString();
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(text);
  if (!match) return null;
  const [, whole = '', fractionText = '', exponentText] = match;
  // Move the decimal point by the exponent (JS prints 1e-7 and 1e+21 with one).
  const shift = exponentText === undefined ? 0 : Number(exponentText);
  let digitsText = whole + fractionText;
  let pointAt = whole.length + shift;
  if (pointAt < 0) {
    digitsText = '0'.repeat(-pointAt) + digitsText;
    pointAt = 0;
  }
  if (pointAt > digitsText.length) digitsText += '0'.repeat(pointAt - digitsText.length);
  const integerPart = digitsText.slice(0, pointAt) || '0';
  const fractionPart = digitsText.slice(pointAt).replace(/0+$/, '');
  if (fractionPart.length > digits) return null;
  const scaled = BigInt(integerPart + fractionPart.padEnd(digits, '0'));
  if (scaled > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const result = Number(scaled);
  return value < 0 ? -result : result;
}

/** Major-unit JSON number → integer minor units, or null when it exceeds the currency's precision. */
export function toMinorUnits(amount: number, currency: string): number | null {
  return toScaledInteger(amount, currencyExponent(currency));
}

/** Integer minor units → the major-unit JSON number partners see (exact for safe integers). */
export function fromMinorUnits(minor: number, currency: string): number {
  return minor / 10 ** currencyExponent(currency);
}
