import { cartLimits } from '@pcp/contracts';

/** An item the sandbox customer can order now, at its unit price in minor units. */
export interface PricedCandidate {
  readonly itemId: string;
  readonly unitMinor: number;
}

export interface OrderLine {
  readonly itemId: string;
  readonly quantity: number;
}

/** The lines, or the most any lines within the cart limits come to when below the minimum. */
export type PlannedLines =
  | { readonly met: true; readonly lines: OrderLine[]; readonly subTotalMinor: number }
  | { readonly met: false; readonly mostMinor: number };

/**
 * The lines of a test order at a store (docs/guide/sandbox.md#placing-an-order-at-your-store): one
 * each of the first `itemCount` candidates; while the subtotal is below the store's minimum,
 * one more of each of those in turn, up to a line's quantity limit; then, should that not
 * reach it, further candidates in their order, each with as many as are still needed. Free
 * items are never raised or added for the minimum: they cannot help.
 */
export function planOrderLines(
  candidates: readonly PricedCandidate[],
  itemCount: number,
  minimumMinor: number,
): PlannedLines {
  const lines = candidates.slice(0, itemCount).map((candidate) => ({ ...candidate, quantity: 1 }));
  let subTotalMinor = lines.reduce((sum, line) => sum + line.unitMinor, 0);
  for (;;) {
    const raisable = lines.filter(
      (line) => line.unitMinor > 0 && line.quantity < cartLimits.maxQuantity,
    );
    if (subTotalMinor >= minimumMinor || raisable.length === 0) break;
    for (const line of raisable) {
      if (subTotalMinor >= minimumMinor) break;
      line.quantity += 1;
      subTotalMinor += line.unitMinor;
    }
  }
  for (const candidate of candidates.slice(itemCount)) {
    if (subTotalMinor >= minimumMinor || lines.length >= cartLimits.maxLineItems) break;
    if (candidate.unitMinor === 0) continue;
    const quantity = Math.min(
      cartLimits.maxQuantity,
      Math.ceil((minimumMinor - subTotalMinor) / candidate.unitMinor),
    );
    lines.push({ ...candidate, quantity });
    subTotalMinor += quantity * candidate.unitMinor;
  }
  if (subTotalMinor < minimumMinor) return { met: false, mostMinor: subTotalMinor };
  return {
    met: true,
    lines: lines.map(({ itemId, quantity }) => ({ itemId, quantity })),
    subTotalMinor,
  };
}
