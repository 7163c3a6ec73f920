import { AppError } from '@pcp/service-kit';
import { describe, expect, it } from 'vitest';
import { fingerprintOf, isFinal } from '../../src/place/idempotency.js';

/** What fingerprintOf throws for `body`, or undefined. */
function refusalOf(body: unknown): AppError | undefined {
  try {
    fingerprintOf(body);
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

describe('fingerprintOf (SHA-256 of the RFC 8785 form)', () => {
  it('is the same for the same body whatever its key order and number spelling', () => {
    const first = JSON.parse('{"tip":1e2,"cart":{"b":[1,2],"a":"x"}}') as unknown;
    const second = JSON.parse('{"cart":{"a":"x","b":[1.0,2]},"tip":100}') as unknown;
    expect(fingerprintOf(first)).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintOf(first)).toBe(fingerprintOf(second));
    expect(fingerprintOf({ tip: 101 })).not.toBe(fingerprintOf({ tip: 100 }));
  });

  // Each of these was a 500 from place, found by the fuzzer.
  it.each([
    ['a number beyond a double', '{"fulfillment":{"scheduleType":-1e309}}', /beyond the range/],
    ['a lone surrogate', '{"client":{"userAgent":"\\ud800x"}}', /lone UTF-16 surrogate/],
    ['arrays nested 3,000 deep', `${'['.repeat(3_000)}${']'.repeat(3_000)}`, /nested deeper/],
  ])('refuses a body with %s as REQUEST_INVALID', (_name, text, detail) => {
    const refusal = refusalOf(JSON.parse(text));
    expect(refusal?.code).toBe('REQUEST_INVALID');
    expect(refusal?.message).toMatch(detail);
  });

  it('fingerprints numbers at the edges a double can hold', () => {
    for (const text of ['{"tip":6.4e-323}', '{"tip":-0}', '{"tip":1.7976931348623157e308}']) {
      expect(refusalOf(JSON.parse(text))).toBeUndefined();
    }
  });
});

describe('isFinal (what is recorded against the key)', () => {
  it('records final failures: validation, declines, store rejections, 403, 404, an expired key', () => {
    for (const code of [
      'ORDER_INVALID',
      'PAYMENT_DECLINED',
      'PAYMENT_TOKEN_INVALID',
      'STORE_REJECTED',
      'PAYMENT_TYPE_NOT_ALLOWED',
      'STORE_NOT_FOUND',
      'IDEMPOTENCY_KEY_EXPIRED',
    ] as const) {
      expect(isFinal(new AppError(code, 'x')), code).toBe(true);
    }
  });

  it('never records 409, 422, 429, retryable failures or 5xx (the key stays to resume)', () => {
    for (const code of [
      'IDEMPOTENCY_KEY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_CONFLICT',
      'CHARGE_STATE_INVALID',
      'RATE_LIMITED',
      'PAYMENT_FAILED',
      'PAYMENT_PROCESSOR_UNAVAILABLE',
      'SERVICE_UNAVAILABLE',
      'INTERNAL',
    ] as const) {
      expect(isFinal(new AppError(code, 'x')), code).toBe(false);
    }
  });
});
