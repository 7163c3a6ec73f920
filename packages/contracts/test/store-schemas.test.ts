import {
  escapePointerToken,
  setStoreStatusInput,
  storeProfileInput,
  toJsonPointer,
} from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { storeProfile as profile } from '@pcp/testing/fixtures';

function issues(input: unknown): z.core.$ZodIssue[] {
  const result = storeProfileInput.safeParse(input);
  return result.success ? [] : result.error.issues;
}

const paths = (input: unknown) => issues(input).map((issue) => issue.path.join('/'));

describe('storeProfileInput', () => {
  it('accepts a valid profile', () => {
    const result = storeProfileInput.safeParse(profile());
    expect(result.success).toBe(true);
    expect(result.data?.delivery?.fee).toBe(2.99);
  });

  it('requires delivery settings for DELIVERY_BY_MERCHANT', () => {
    for (const delivery of [null, undefined]) {
      const found = issues(profile({ fulfillmentTypes: ['DELIVERY_BY_MERCHANT'], delivery }));
      expect(found).toEqual([
        expect.objectContaining({
          path: ['delivery'],
          message: 'Required for DELIVERY_BY_MERCHANT',
        }),
      ]);
    }
    // Pickup only: no delivery settings needed.
    expect(issues(profile({ fulfillmentTypes: ['PICKUP'], delivery: null }))).toEqual([]);
  });

  it('requires pickup settings for PICKUP', () => {
    const found = issues(profile({ fulfillmentTypes: ['PICKUP'], pickup: null }));
    expect(found).toEqual([
      expect.objectContaining({ path: ['pickup'], message: 'Required for PICKUP' }),
    ]);
    expect(issues(profile({ fulfillmentTypes: ['DELIVERY_BY_MERCHANT'], pickup: null }))).toEqual(
      [],
    );
  });

  it('refuses a duplicate fulfillment type, an empty list and an unknown type', () => {
    expect(issues(profile({ fulfillmentTypes: ['PICKUP', 'PICKUP'] }))).toEqual([
      expect.objectContaining({
        path: ['fulfillmentTypes'],
        message: 'Duplicate fulfillment type',
      }),
    ]);
    expect(paths(profile({ fulfillmentTypes: [] }))).toContain('fulfillmentTypes');
    expect(paths(profile({ fulfillmentTypes: ['DRONE'] }))).toContain('fulfillmentTypes/0');
  });

  it('checks money precision per currency with a PRECISION_EXCEEDED code', () => {
    const usd = issues(profile({ minimumOrder: 1.005 }));
    expect(usd).toHaveLength(1);
    expect(usd[0]).toMatchObject({ code: 'custom', path: ['minimumOrder'] });
    expect((usd[0] as { params?: { code?: string } }).params?.code).toBe('PRECISION_EXCEEDED');

    const fee = issues(
      profile({ delivery: { radiusMeters: 1, fee: 0.1 + 0.2, minimumOrder: 1, etaMinutes: 5 } }),
    );
    expect(fee).toEqual([
      expect.objectContaining({
        path: ['delivery', 'fee'],
        params: { code: 'PRECISION_EXCEEDED' },
      }),
    ]);

    const yen = issues(
      profile({
        currency: 'JPY',
        minimumOrder: 1.5,
        delivery: { radiusMeters: 1, fee: 300, minimumOrder: 0.5, etaMinutes: 5 },
      }),
    );
    expect(yen.map((issue) => issue.path.join('/')).sort()).toEqual([
      'delivery/minimumOrder',
      'minimumOrder',
    ]);
    expect(
      yen.every(
        (issue) => (issue as { params?: { code?: string } }).params?.code === 'PRECISION_EXCEEDED',
      ),
    ).toBe(true);

    // Three digits are fine in KWD, four are not; the currency defaults to USD.
    expect(issues(profile({ currency: 'KWD', minimumOrder: 1.125 }))).toEqual([]);
    expect(paths(profile({ currency: 'KWD', minimumOrder: 1.1255 }))).toEqual(['minimumOrder']);
    expect(paths(profile({ currency: undefined, minimumOrder: 1.125 }))).toEqual(['minimumOrder']);
    expect(issues(profile({ currency: undefined, minimumOrder: 1.12 }))).toEqual([]);
  });

  it('allows a tax rate of up to 6 fraction digits', () => {
    expect(issues(profile({ taxRate: 0.123456 }))).toEqual([]);
    const found = issues(profile({ taxRate: 0.1234567 }));
    expect(found).toEqual([
      expect.objectContaining({ path: ['taxRate'], params: { code: 'PRECISION_EXCEEDED' } }),
    ]);
    expect(paths(profile({ taxRate: 1.5 }))).toEqual(['taxRate']);
    expect(paths(profile({ taxRate: -0.1 }))).toEqual(['taxRate']);
  });

  it('refuses an unknown time zone', () => {
    expect(issues(profile({ timezone: 'Mars/Olympus' }))).toEqual([
      expect.objectContaining({ path: ['timezone'], message: 'Unknown IANA time zone' }),
    ]);
    expect(issues(profile({ timezone: 'Asia/Tokyo' }))).toEqual([]);
  });

  it('refuses an unknown ISO 4217 currency', () => {
    expect(issues(profile({ currency: 'XYZ' }))).toEqual([
      expect.objectContaining({ path: ['currency'], message: 'Unknown ISO 4217 currency' }),
    ]);
    expect(paths(profile({ currency: 'usd' }))).toContain('currency');
  });

  it.each(['US', 'USDX', 'usd', 'XYZ'])(
    'refuses the malformed currency %s with an issue at /currency instead of throwing',
    (currency) => {
      const result = storeProfileInput.safeParse(profile({ currency, minimumOrder: 1.5 }));
      expect(result.success).toBe(false);
      expect(result.error?.issues.map((issue) => issue.path.join('/'))).toEqual(['currency']);
    },
  );

  it('refuses an availability window that ends before it starts, but allows end 00:00:00', () => {
    expect(
      issues(
        profile({ availability: [{ dayOfWeek: 'Monday', start: '10:00:00', end: '09:00:00' }] }),
      ),
    ).toEqual([expect.objectContaining({ path: ['availability', 0, 'end'] })]);
    expect(
      paths(
        profile({ availability: [{ dayOfWeek: 'Monday', start: '10:00:00', end: '10:00:00' }] }),
      ),
    ).toEqual(['availability/0/end']);
    expect(
      issues(
        profile({ availability: [{ dayOfWeek: 'Friday', start: '18:00:00', end: '00:00:00' }] }),
      ),
    ).toEqual([]);
    expect(
      paths(
        profile({ availability: [{ dayOfWeek: 'Funday', start: '25:00:00', end: '10:00:00' }] }),
      ),
    ).toEqual(expect.arrayContaining(['availability/0/dayOfWeek', 'availability/0/start']));
    expect(issues(profile({ availability: null }))).toEqual([]);
  });

  it('strips unknown keys (computed fields sent back are ignored)', () => {
    const result = storeProfileInput.parse(
      profile({
        status: 'paused',
        storeId: 'x',
        createdAt: 'yesterday',
        address: { ...(profile().address as object), extra: 1 },
      }),
    );
    expect(result).not.toHaveProperty('status');
    expect(result).not.toHaveProperty('storeId');
    expect(result).not.toHaveProperty('createdAt');
    expect(result.address).not.toHaveProperty('extra');
    expect(result.name).toBe('Chicago Burgers');
  });

  it('reports missing required fields', () => {
    const found = issues({ name: 'x' });
    const missing = found
      .filter((issue) => issue.code === 'invalid_type')
      .map((issue) => issue.path.join('/'));
    expect(missing).toEqual(
      expect.arrayContaining(['phone', 'timezone', 'address', 'fulfillmentTypes', 'taxRate']),
    );
  });
});

describe('setStoreStatusInput', () => {
  it('accepts online and paused with a reason', () => {
    expect(setStoreStatusInput.parse({ status: 'online' })).toEqual({ status: 'online' });
    expect(setStoreStatusInput.parse({ status: 'paused', reason: 'too_busy' })).toEqual({
      status: 'paused',
      reason: 'too_busy',
    });
    const resumeAt = '2030-01-01T10:00:00Z';
    expect(
      setStoreStatusInput.parse({ status: 'paused', reason: 'other', resumeAt }),
    ).toMatchObject({ resumeAt });
    expect(
      setStoreStatusInput.parse({ status: 'paused', reason: 'other', resumeAt: null }),
    ).toMatchObject({
      resumeAt: null,
    });
  });

  it('refuses an unknown status, a pause without or with an unknown reason, and a bad resumeAt', () => {
    for (const body of [
      { status: 'closed' },
      {},
      { status: 'paused' },
      { status: 'paused', reason: 'bored' },
      { status: 'paused', reason: 'other', resumeAt: 'tomorrow' },
      { status: 'paused', reason: 'other', resumeAt: '2030-01-01T10:00:00+02:00' },
    ]) {
      expect(setStoreStatusInput.safeParse(body).success, JSON.stringify(body)).toBe(false);
    }
    const unknown = setStoreStatusInput.safeParse({ status: 'closed' });
    expect(unknown.error?.issues[0]?.path).toEqual(['status']);
    const noReason = setStoreStatusInput.safeParse({ status: 'paused' });
    expect(noReason.error?.issues[0]?.path).toEqual(['reason']);
  });

  it('drops pause fields from an online change', () => {
    expect(setStoreStatusInput.parse({ status: 'online', reason: 'other' })).toEqual({
      status: 'online',
    });
  });
});

describe('toJsonPointer', () => {
  it('builds rooted RFC 6901 pointers', () => {
    expect(toJsonPointer([])).toBe('');
    expect(toJsonPointer(['delivery', 'fee'])).toBe('/delivery/fee');
    expect(toJsonPointer(['availability', 0, 'end'])).toBe('/availability/0/end');
  });

  it("escapes '~' as ~0 and '/' as ~1 (in that order)", () => {
    expect(toJsonPointer(['a/b'])).toBe('/a~1b');
    expect(toJsonPointer(['m~n'])).toBe('/m~0n');
    expect(toJsonPointer(['~/'])).toBe('/~0~1');
    expect(toJsonPointer(['~1'])).toBe('/~01');
    expect(toJsonPointer([''])).toBe('/');
    expect(escapePointerToken(3)).toBe('3');
  });
});
