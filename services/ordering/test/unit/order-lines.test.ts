import { cartLimits } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import { planOrderLines } from '../../src/sandbox/order-lines.js';

const soda = { itemId: 'soda', unitMinor: 199 };
const fries = { itemId: 'fries', unitMinor: 125 };
const water = { itemId: 'water', unitMinor: 0 };
const max = cartLimits.maxQuantity;

describe('planOrderLines', () => {
  it('orders one each of the first itemCount items when there is no minimum, or it is met', () => {
    expect(planOrderLines([soda, fries, water], 2, 0)).toEqual({
      met: true,
      lines: [
        { itemId: 'soda', quantity: 1 },
        { itemId: 'fries', quantity: 1 },
      ],
      subTotalMinor: 324,
    });
    expect(planOrderLines([soda], 1, 199)).toMatchObject({ lines: [{ quantity: 1 }] });
  });

  it('raises the quantity until the subtotal meets the minimum, never past it by a unit', () => {
    // 5.00: three sodas (5.97), not two (3.98).
    expect(planOrderLines([soda, fries], 1, 500)).toEqual({
      met: true,
      lines: [{ itemId: 'soda', quantity: 3 }],
      subTotalMinor: 597,
    });
  });

  it('raises the items ordered in turn, leaving a free one as it is', () => {
    // Three of each come to 9.72: one more soda reaches 10.00.
    expect(planOrderLines([soda, water, fries], 3, 1_000)).toEqual({
      met: true,
      lines: [
        { itemId: 'soda', quantity: 4 },
        { itemId: 'water', quantity: 1 },
        { itemId: 'fries', quantity: 3 },
      ],
      subTotalMinor: 1_171,
    });
  });

  it('adds further items when the first ones at their limit stay below the minimum', () => {
    const planned = planOrderLines([water, soda, fries], 1, 2_000);
    expect(planned).toEqual({
      met: true,
      lines: [
        { itemId: 'water', quantity: 1 },
        { itemId: 'soda', quantity: 11 },
      ],
      subTotalMinor: 2_189,
    });
    const past = planOrderLines([soda, fries], 1, max * 199 + 300);
    expect(past).toEqual({
      met: true,
      lines: [
        { itemId: 'soda', quantity: max },
        { itemId: 'fries', quantity: 3 },
      ],
      subTotalMinor: max * 199 + 375,
    });
  });

  it('says what the most is when no lines within the limits meet the minimum', () => {
    expect(planOrderLines([soda, water], 1, 500_000)).toEqual({ met: false, mostMinor: max * 199 });
    expect(planOrderLines([water], 1, 1)).toEqual({ met: false, mostMinor: 0 });
  });
});
