import { describe, expect, it } from 'vitest';
import { computeAmounts, salesTaxMinor } from '../../src/validate/order-amounts.js';
import {
  amountInCurrency,
  checkClient,
  checkFulfillment,
} from '../../src/validate/order-checks.js';

const now = new Date('2026-11-23T12:00:00Z');
const userAgent = 'Mozilla/5.0';

describe('salesTaxMinor', () => {
  it('rounds half up, once, on the subTotal', () => {
    expect(salesTaxMinor(1_900, 87_500)).toBe(166); // 166.25
    expect(salesTaxMinor(2_000, 87_500)).toBe(175);
    expect(salesTaxMinor(4, 125_000)).toBe(1); // 0.5 rounds up
    expect(salesTaxMinor(3, 125_000)).toBe(0); // 0.375
    expect(salesTaxMinor(0, 87_500)).toBe(0);
  });

  it('stays exact where subTotal × rate passes 2^53', () => {
    // 10^12 minor units × 87,500 ppm = 8.75 × 10^16.
    expect(salesTaxMinor(1_000_000_000_000, 87_500)).toBe(87_500_000_000);
    expect(salesTaxMinor(999_999_999_999, 999_999)).toBe(999_998_999_999);
  });
});

describe('computeAmounts', () => {
  it('adds subTotal, delivery fee, tax on the subTotal and tip (the contract’s example)', () => {
    const { amounts, totalMinor } = computeAmounts({
      currency: 'USD',
      subTotalMinor: 1_900,
      deliveryFeeMinor: 299,
      taxRatePpm: 87_500,
      tipMinor: 200,
    });
    expect(totalMinor).toBe(2_565);
    expect(amounts).toEqual({
      currency: 'USD',
      subTotal: 19,
      fees: 2.99,
      feesBreakdown: [{ type: 'DELIVERY', amount: 2.99 }],
      promotions: 0,
      taxes: 1.66,
      taxesBreakdown: [{ type: 'SALES_TAX', rate: 0.0875, amount: 1.66 }],
      adjustments: 0,
      tip: 2,
      total: 25.65,
    });
  });

  it('has no fee for pickup and converts by the currency’s digits', () => {
    const { amounts } = computeAmounts({
      currency: 'JPY',
      subTotalMinor: 1_500,
      deliveryFeeMinor: null,
      taxRatePpm: 100_000,
      tipMinor: 0,
    });
    expect(amounts).toMatchObject({ fees: 0, feesBreakdown: [], taxes: 150, total: 1_650 });
    const kwd = computeAmounts({
      currency: 'KWD',
      subTotalMinor: 1_234,
      deliveryFeeMinor: 500,
      taxRatePpm: 0,
      tipMinor: 1,
    });
    expect(kwd.amounts.total).toBe(1.735);
  });
});

describe('checkClient', () => {
  it.each([
    [undefined, 'CLIENT_CONTEXT_REQUIRED', '/client'],
    [null, 'CLIENT_CONTEXT_REQUIRED', '/client'],
    [{ userAgent }, 'CLIENT_CONTEXT_REQUIRED', '/client/ip'],
    [{ ip: '  ', userAgent }, 'CLIENT_CONTEXT_REQUIRED', '/client/ip'],
    [{ ip: '8.8.8.8', userAgent: ' ' }, 'CLIENT_CONTEXT_REQUIRED', '/client/userAgent'],
    [{ ip: 'not-an-ip', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '10.1.2.3', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '127.0.0.1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '169.254.1.1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '100.64.0.1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '240.0.0.1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '::1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: 'fe80::1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [{ ip: '::ffff:192.168.1.1', userAgent }, 'CLIENT_IP_INVALID', '/client/ip'],
    [
      { ip: '8.8.8.8', userAgent: 'x'.repeat(513) },
      'CLIENT_USER_AGENT_INVALID',
      '/client/userAgent',
    ],
  ])('%j → %s at %s', (client, code, pointer) => {
    expect(checkClient(client)).toMatchObject({ code, pointer });
  });

  it('accepts public IPv4, IPv6 and IPv4-mapped addresses and a 512-character user agent', () => {
    for (const ip of ['8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8']) {
      expect(checkClient({ ip, userAgent: 'x'.repeat(512) })).toBeUndefined();
    }
  });
});

describe('checkFulfillment', () => {
  const pickup = { mode: 'PICKUP' as const };

  it('orders ASAP for now, and refuses a scheduledTime on an ASAP order', () => {
    expect(checkFulfillment({ ...pickup, scheduleType: 'ASAP' }, now)).toEqual({
      errors: [],
      orderTime: now,
    });
    const result = checkFulfillment(
      { ...pickup, scheduleType: 'ASAP', scheduledTime: '2026-11-23T13:00:00Z' },
      now,
    );
    expect(result.errors.map((error) => error.pointer)).toEqual(['/fulfillment/scheduledTime']);
  });

  it('wants a future scheduledTime on a SCHEDULED order, and orders for that instant', () => {
    expect(checkFulfillment({ ...pickup, scheduleType: 'SCHEDULED' }, now)).toMatchObject({
      errors: [{ code: 'SCHEDULED_TIME_REQUIRED', pointer: '/fulfillment/scheduledTime' }],
      orderTime: null,
    });
    expect(
      checkFulfillment(
        { ...pickup, scheduleType: 'SCHEDULED', scheduledTime: '2026-11-23T12:00:00Z' },
        now,
      ).errors,
    ).toMatchObject([{ code: 'SCHEDULED_TIME_IN_PAST' }]);
    expect(
      checkFulfillment(
        { ...pickup, scheduleType: 'SCHEDULED', scheduledTime: '2026-11-23T18:30:00Z' },
        now,
      ),
    ).toEqual({ errors: [], orderTime: new Date('2026-11-23T18:30:00Z') });
  });

  it('caps delivery instructions at 500 characters', () => {
    const delivery = {
      mode: 'DELIVERY_BY_MERCHANT' as const,
      scheduleType: 'ASAP' as const,
      address: { addressId: '6f1c1a52-5b4e-4a40-9d0e-7b1b2f1f8c11' },
      deliveryType: 'DOOR_TO_DOOR' as const,
    };
    expect(checkFulfillment({ ...delivery, instructions: 'x'.repeat(500) }, now).errors).toEqual(
      [],
    );
    expect(
      checkFulfillment({ ...delivery, instructions: 'x'.repeat(501) }, now).errors,
    ).toMatchObject([{ code: 'INSTRUCTIONS_TOO_LONG', pointer: '/fulfillment/instructions' }]);
  });
});

describe('amountInCurrency', () => {
  it('converts to minor units, or reports PRECISION_EXCEEDED at the pointer', () => {
    expect(amountInCurrency(2.5, 'USD', '/tip')).toEqual({ minor: 250 });
    expect(amountInCurrency(2.005, 'USD', '/tip')).toEqual({
      error: expect.objectContaining({ code: 'PRECISION_EXCEEDED', pointer: '/tip' }),
    });
    expect(amountInCurrency(1.5, 'JPY', '/tip')).toMatchObject({
      error: { code: 'PRECISION_EXCEEDED' },
    });
    expect(amountInCurrency(1.234, 'KWD', '/amounts/total')).toEqual({ minor: 1_234 });
  });
});
