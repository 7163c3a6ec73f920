/**
 * Money helpers (contract §2): amounts travel as JSON numbers in major units and live as
 * integer minor units everywhere inside the platform.
 */

const exponentCache = new Map<string, number>();
const knownCurrencies = new Set(Intl.supportedValuesOf('currency'));

/** True for an ISO 4217 code this runtime knows (its ICU data names the minor unit). */
export function isKnownCurrency(code: string): boolean {
  return knownCurrencies.has(code);
}

/** Number of fraction digits of an ISO 4217 currency (USD 2, JPY 0, KWD 3). */
export function currencyExponent(currency: string): number {
  let exponent = exponentCache.get(currency);
  if (exponent === undefined) {
    exponent =
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
        .maximumFractionDigits ?? 2;
    exponentCache.set(currency, exponent);
  }
  return exponent;
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
