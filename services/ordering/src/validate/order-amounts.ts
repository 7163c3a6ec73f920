import { fromMinorUnits, TAX_RATE_DIGITS, type OrderAmounts } from '@pcp/contracts';

const PPM = 10n ** BigInt(TAX_RATE_DIGITS);

/** What an order's amounts are computed from, money in integer minor units. */
export interface AmountsInput {
  readonly currency: string;
  readonly subTotalMinor: number;
  /** The store's delivery fee for a delivery order; null for pickup. */
  readonly deliveryFeeMinor: number | null;
  /** Sales tax in parts per million (0.0875 is 87,500). */
  readonly taxRatePpm: number;
  readonly tipMinor: number;
}

/** The amounts in minor units, and as partners see them. */
export interface ComputedAmounts {
  readonly totalMinor: number;
  readonly amounts: OrderAmounts;
}

/**
 * Tax on the subTotal, rounded half up once (docs/guide/payments.md#money), in integer arithmetic:
 * the product of a large subTotal and a rate in ppm exceeds 2^53, so it is taken in BigInt.
 */
export function salesTaxMinor(subTotalMinor: number, taxRatePpm: number): number {
  const product = BigInt(subTotalMinor) * BigInt(taxRatePpm);
  return Number((product + PPM / 2n) / PPM);
}

/**
 * total = subTotal + fees − promotions + taxes + adjustments + tip (docs/guide/orders.md#amounts),
 * every term in minor units of the currency; promotions and adjustments are not offered yet (0).
 */
export function computeAmounts(input: AmountsInput): ComputedAmounts {
  const feesMinor = input.deliveryFeeMinor ?? 0;
  const taxesMinor = salesTaxMinor(input.subTotalMinor, input.taxRatePpm);
  const totalMinor = input.subTotalMinor + feesMinor + taxesMinor + input.tipMinor;
  const money = (minor: number) => fromMinorUnits(minor, input.currency);
  return {
    totalMinor,
    amounts: {
      currency: input.currency,
      subTotal: money(input.subTotalMinor),
      fees: money(feesMinor),
      feesBreakdown:
        input.deliveryFeeMinor === null ? [] : [{ type: 'DELIVERY', amount: money(feesMinor) }],
      promotions: 0,
      taxes: money(taxesMinor),
      taxesBreakdown: [
        {
          type: 'SALES_TAX',
          rate: input.taxRatePpm / Number(PPM),
          amount: money(taxesMinor),
        },
      ],
      adjustments: 0,
      tip: money(input.tipMinor),
      total: money(totalMinor),
    },
  };
}
