import { describe, expect, it } from 'vitest';
import { judgeCharge, type ChargeFacts } from '../../src/domain/ledger.js';

const now = new Date('2026-12-01T12:00:00Z');
const bounds = { now, inFlightMs: 25 * 3_600_000 };
const hoursAgo = (hours: number) => new Date(now.getTime() - hours * 3_600_000);

const charge = (overrides: Partial<ChargeFacts> = {}): ChargeFacts => ({
  status: 'captured',
  amount: 2_364,
  currency: 'USD',
  capturedAmount: 2_364,
  refundedAmount: 0,
  createdAt: hoursAgo(1),
  keyedByOrder: true,
  ...overrides,
});
const order = (
  state: 'open' | 'completed' | 'cancelled' = 'open',
  totalMinor = 2_364,
  refund: { refund: 'none' | 'owed' | 'settled'; refundOwedSince: string | null } = {
    refund: 'none',
    refundOwedSince: null,
  },
) => ({
  orderId: '00000000-0000-4000-8000-000000000001',
  state,
  totalMinor,
  currency: 'USD',
  ...refund,
});
const owedSince = (hours: number) => ({
  refund: 'owed' as const,
  refundOwedSince: hoursAgo(hours).toISOString(),
});
const attempt = (answered: boolean) => ({
  orderId: '00000000-0000-4000-8000-000000000001',
  step: answered ? 'recorded' : 'capturing',
  answered,
  expiresAt: now.toISOString(),
});
const none = { orders: [], attempt: null };

describe('judgeCharge: every charge is explained, released or reported', () => {
  it('explains a capture paying for exactly one live order of its amount', () => {
    expect(judgeCharge(charge(), { orders: [order()], attempt: null }, bounds)).toEqual({
      class: 'captured_for_order',
    });
    expect(
      judgeCharge(charge(), { orders: [order('completed')], attempt: attempt(true) }, bounds),
    ).toEqual({ class: 'captured_for_order' });
  });

  it('reports two orders on one charge, and an order whose total is not what was paid', () => {
    expect(judgeCharge(charge(), { orders: [order(), order()], attempt: null }, bounds)).toEqual({
      class: 'unexplained',
      reason: '2 orders name this charge',
    });
    expect(
      judgeCharge(charge(), { orders: [order('open', 999)], attempt: null }, bounds),
    ).toMatchObject({ class: 'unexplained' });
  });

  it('releases a capture no order will use, or one a cancel that owed no refund kept', () => {
    expect(judgeCharge(charge(), none, bounds)).toEqual({ release: 'a capture with no order' });
    expect(judgeCharge(charge(), { orders: [], attempt: attempt(true) }, bounds)).toMatchObject({
      release: expect.any(String),
    });
    expect(judgeCharge(charge(), { orders: [order('cancelled')], attempt: null }, bounds)).toEqual({
      release: 'the capture of a cancelled order that owed no refund',
    });
  });

  it('leaves a cancelled order’s capture to the refund ordering owes, until the bound', () => {
    const cancelled = (refund: Parameters<typeof order>[2]) => ({
      orders: [order('cancelled', 2_364, refund)],
      attempt: attempt(true),
    });
    expect(judgeCharge(charge(), cancelled(owedSince(1)), bounds)).toEqual({
      class: 'in_flight',
    });
    expect(judgeCharge(charge(), cancelled(owedSince(26)), bounds)).toMatchObject({
      class: 'unexplained',
    });
    // Ordering says payments answered the refund; payments has the charge captured.
    expect(
      judgeCharge(charge(), cancelled({ refund: 'settled', refundOwedSince: null }), bounds),
    ).toMatchObject({ class: 'unexplained' });
    expect(
      judgeCharge(
        charge({ status: 'refunded', refundedAmount: 2_364 }),
        cancelled({ refund: 'settled', refundOwedSince: null }),
        bounds,
      ),
    ).toEqual({ class: 'refunded' });
  });

  it('leaves an authorization or capture its unanswered attempt may still use in flight, until the bound', () => {
    const open = { orders: [], attempt: attempt(false) };
    expect(judgeCharge(charge({ status: 'authorized' }), open, bounds)).toEqual({
      class: 'in_flight',
    });
    expect(judgeCharge(charge(), open, bounds)).toEqual({ class: 'in_flight' });
    expect(
      judgeCharge(charge({ status: 'authorized', createdAt: hoursAgo(26) }), open, bounds),
    ).toMatchObject({ class: 'unexplained' });
  });

  it('releases an authorization whose attempt ended without it, and reports one an order names', () => {
    expect(judgeCharge(charge({ status: 'authorized' }), none, bounds)).toEqual({
      release: 'an authorization no order will use',
    });
    expect(
      judgeCharge(charge({ status: 'authorized' }), { orders: [order()], attempt: null }, bounds),
    ).toMatchObject({ class: 'unexplained' });
  });

  it('protects a charge from before order-keyed charges by its age alone', () => {
    const legacy = charge({ status: 'authorized', keyedByOrder: false });
    expect(judgeCharge(legacy, none, bounds)).toEqual({ class: 'in_flight' });
    expect(judgeCharge({ ...legacy, createdAt: hoursAgo(30) }, none, bounds)).toMatchObject({
      release: expect.any(String),
    });
  });

  it('explains released and declined charges unless a live order names them', () => {
    expect(judgeCharge(charge({ status: 'voided' }), none, bounds)).toEqual({ class: 'voided' });
    expect(judgeCharge(charge({ status: 'refunded' }), none, bounds)).toEqual({
      class: 'refunded',
    });
    expect(
      judgeCharge(
        charge({ status: 'refunded' }),
        { orders: [order('cancelled')], attempt: null },
        bounds,
      ),
    ).toEqual({ class: 'refunded' });
    expect(judgeCharge(charge({ status: 'declined' }), none, bounds)).toEqual({
      class: 'declined',
    });
    for (const status of ['voided', 'refunded', 'declined'] as const) {
      expect(
        judgeCharge(charge({ status }), { orders: [order()], attempt: null }, bounds),
      ).toMatchObject({ class: 'unexplained' });
    }
  });

  it('finds an authorization the processor never made not authorized, unless its attempt may still make it', () => {
    const unknown = charge({ status: 'authorizing' });
    expect(judgeCharge(unknown, none, bounds)).toEqual({ class: 'not_authorized' });
    expect(judgeCharge(unknown, { orders: [], attempt: attempt(true) }, bounds)).toEqual({
      class: 'not_authorized',
    });
    expect(judgeCharge(unknown, { orders: [], attempt: attempt(false) }, bounds)).toEqual({
      class: 'in_flight',
    });
    expect(judgeCharge(unknown, { orders: [order()], attempt: null }, bounds)).toMatchObject({
      class: 'unexplained',
    });
  });
});
