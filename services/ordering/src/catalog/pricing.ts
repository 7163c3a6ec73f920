import {
  cartLimits,
  fromMinorUnits,
  isWithinWindows,
  maxProblemErrors,
  type AvailabilityWindow,
  type CartInput,
  type LineItemInput,
  type OrderError,
  type PricedCart,
  type PricedLineItem,
} from '@pcp/contracts';
import type { CompiledCatalog, CompiledItem } from './compiled-catalog.js';

export interface PricingContext {
  readonly catalog: CompiledCatalog;
  /**
   * When the order would be made, in the store's time zone: catalog availability windows
   * are checked only then (validate and place). A cart has no order time (docs/guide/carts.md).
   */
  readonly orderTime?: { readonly at: Date; readonly timezone: string };
  /**
   * The store's item availability overrides and the instant they are read at (the order time;
   * now for a cart): an overridden item, or option, is unavailable until its `until`.
   */
  readonly overrides?: { readonly until: ReadonlyMap<string, number>; readonly at: Date };
}

/** A priced cart: every line, the problems of each, and totals over the priceable ones. */
export interface CartPricing {
  /**
   * The cart as returned: lines that cannot be priced have null prices, stay out of
   * subTotal and itemCount, and are listed in `errors` (capped at 100).
   */
  readonly cart: PricedCart;
  readonly subTotalMinor: number;
  /** The problems of each top-level line, by index, with pointers from `linePointer`. */
  readonly lineErrors: readonly (readonly OrderError[])[];
  /** Problems of the cart as a whole (more lines than a cart may hold). */
  readonly cartErrors: readonly OrderError[];
}

interface PricedTree {
  readonly priced: PricedLineItem;
  /** Unit price × quantity in minor units; null when the line (or an option) has problems. */
  readonly totalMinor: number | null;
}

const error = (code: string, message: string, pointer: string): OrderError => ({
  code,
  message,
  pointer,
});

const validQuantity = (quantity: number) =>
  quantity >= cartLimits.minQuantity && quantity <= cartLimits.maxQuantity;

/**
 * Price a cart from a compiled catalog, with no I/O. Every line is priced on its own, so a
 * caller can tell the lines an operation touched from those already in the cart; every
 * problem becomes an OrderError with an RFC 6901 pointer (`linePointer(i)` for line i,
 * `/lineItems/i` by default). Money is integer minor units throughout and converted to
 * major units only in the returned cart.
 */
export function priceCart(
  cart: CartInput,
  context: PricingContext,
  options: { linePointer?: (index: number) => string; cartPointer?: string } = {},
): CartPricing {
  const { catalog, orderTime, overrides } = context;
  const overriddenAt = overrides?.at.getTime() ?? 0;
  const linePointer = options.linePointer ?? ((index: number) => `/lineItems/${index}`);
  const money = (minor: number) => fromMinorUnits(minor, catalog.currency);
  const seenLineIds = new Set<string>();
  // Catalogs share one windows list among all their items: decide each list once per cart.
  const openWindows = new Map<readonly AvailabilityWindow[], boolean>();
  const isOpen = (windows: readonly AvailabilityWindow[]) => {
    if (!orderTime) return true;
    let open = openWindows.get(windows);
    if (open === undefined) {
      open = isWithinWindows(windows, orderTime.timezone, orderTime.at);
      openWindows.set(windows, open);
    }
    return open;
  };

  function checkItem(
    itemId: string,
    item: CompiledItem,
    pointer: string,
    topLevel: boolean,
    errors: OrderError[],
  ) {
    if (!item.available) {
      errors.push(error('ITEM_UNAVAILABLE', `${item.name} is not available`, pointer));
      return;
    }
    const until = overrides?.until.get(itemId);
    if (until !== undefined && until > overriddenAt) {
      errors.push(
        error(
          'ITEM_UNAVAILABLE',
          until === Infinity
            ? `${item.name} is not available for now`
            : `${item.name} is not available until ${new Date(until).toISOString()}`,
          pointer,
        ),
      );
      return;
    }
    // Options need only be available; an ordered item needs a catalog that lists it (open
    // at the order time, when there is one).
    if (!topLevel) return;
    if (item.catalogWindows.length === 0) {
      errors.push(
        error('ITEM_UNAVAILABLE', `${item.name} can only be ordered as a modifier`, pointer),
      );
    } else if (!item.catalogWindows.some(isOpen)) {
      errors.push(
        error('OUTSIDE_AVAILABILITY_WINDOW', `${item.name} is not offered at this time`, pointer),
      );
    }
  }

  function priceLine(
    line: LineItemInput,
    pointer: string,
    topLevel: boolean,
    errors: OrderError[],
  ): PricedTree {
    const before = errors.length;
    if (seenLineIds.has(line.lineItemId)) {
      errors.push(
        error(
          'LINE_ITEM_DUPLICATE',
          'Another line already has this lineItemId',
          `${pointer}/lineItemId`,
        ),
      );
    }
    seenLineIds.add(line.lineItemId);
    if (!validQuantity(line.quantity)) {
      errors.push(
        error(
          'QUANTITY_INVALID',
          `Quantity must be from ${cartLimits.minQuantity} to ${cartLimits.maxQuantity}`,
          `${pointer}/quantity`,
        ),
      );
    }
    const item = catalog.items.get(line.itemId);
    if (!item) {
      errors.push(
        error(
          'ITEM_UNAVAILABLE',
          "This item is not in the store's current catalog",
          `${pointer}/itemId`,
        ),
      );
    } else {
      checkItem(line.itemId, item, pointer, topLevel, errors);
    }

    const groups: PricedLineItem['modifierGroups'] = [];
    // Options chosen per modifier group of the item (by its index in modifierGroupIds),
    // counted by quantity; a group may be sent in more than one selection.
    const chosen = item?.modifierGroupIds.map(() => 0) ?? [];
    let modifiersMinor = 0;
    const selections = line.modifierGroups ?? [];
    for (let groupIndex = 0; groupIndex < selections.length; groupIndex++) {
      const selection = selections[groupIndex]!;
      const groupPointer = `${pointer}/modifierGroups/${groupIndex}`;
      const slot = item ? item.modifierGroupIds.indexOf(selection.modifierGroupId) : -1;
      const group = slot < 0 ? undefined : catalog.modifierGroups.get(selection.modifierGroupId);
      if (item && !group) {
        errors.push(
          error(
            'MODIFIER_INVALID',
            'This modifier group does not belong to the item',
            `${groupPointer}/modifierGroupId`,
          ),
        );
      }
      const options: PricedLineItem[] = [];
      for (let optionIndex = 0; optionIndex < selection.lineItems.length; optionIndex++) {
        const option = selection.lineItems[optionIndex]!;
        const optionPointer = `${groupPointer}/lineItems/${optionIndex}`;
        const inGroup = group?.optionIds.has(option.itemId) ?? false;
        if (group && !inGroup) {
          errors.push(
            error(
              'MODIFIER_INVALID',
              `This option is not part of ${group.name}`,
              `${optionPointer}/itemId`,
            ),
          );
        }
        const priced = priceLine(option, optionPointer, false, errors);
        options.push(priced.priced);
        if (priced.totalMinor !== null) modifiersMinor += priced.totalMinor;
        // An option outside the group, or with a bad quantity, is already an error; it must
        // not sway the group's count.
        if (inGroup && validQuantity(option.quantity)) {
          chosen[slot] = chosen[slot]! + option.quantity;
        }
      }
      if (group && chosen[slot]! > group.maximumAllowed) {
        errors.push(
          error(
            'MODIFIER_INVALID',
            `Choose at most ${group.maximumAllowed} from ${group.name}`,
            groupPointer,
          ),
        );
      }
      groups.push({
        modifierGroupId: selection.modifierGroupId,
        name: group?.name ?? null,
        lineItems: options,
      });
    }
    for (let slot = 0; slot < chosen.length; slot++) {
      const group = catalog.modifierGroups.get(item!.modifierGroupIds[slot]!);
      if (group && chosen[slot]! < group.minimumAllowed) {
        errors.push(
          error(
            'MODIFIER_REQUIRED',
            `Choose at least ${group.minimumAllowed} from ${group.name}`,
            pointer,
          ),
        );
      }
    }

    let totalMinor: number | null = null;
    let unitMinor: number | null = null;
    if (item && errors.length === before) {
      unitMinor = item.priceMinor + modifiersMinor;
      totalMinor = unitMinor * line.quantity;
      if (!Number.isSafeInteger(totalMinor)) {
        errors.push(
          error('QUANTITY_INVALID', 'The line total is too large', `${pointer}/quantity`),
        );
        unitMinor = totalMinor = null;
      }
    }
    return {
      totalMinor,
      priced: {
        itemId: line.itemId,
        lineItemId: line.lineItemId,
        quantity: line.quantity,
        name: item?.name ?? null,
        unitPrice: unitMinor === null ? null : money(unitMinor),
        totalPrice: totalMinor === null ? null : money(totalMinor),
        modifierGroups: groups,
      },
    };
  }

  const lineItems: PricedLineItem[] = [];
  const lineErrors: OrderError[][] = [];
  let subTotalMinor = 0;
  let itemCount = 0;
  cart.lineItems.forEach((line, index) => {
    const errors: OrderError[] = [];
    const pointer = linePointer(index);
    const { priced, totalMinor } = priceLine(line, pointer, true, errors);
    lineErrors.push(errors);
    if (totalMinor !== null && !Number.isSafeInteger(subTotalMinor + totalMinor)) {
      errors.push(error('QUANTITY_INVALID', 'The cart total is too large', `${pointer}/quantity`));
      lineItems.push({ ...priced, unitPrice: null, totalPrice: null });
      return;
    }
    lineItems.push(priced);
    if (totalMinor === null) return;
    subTotalMinor += totalMinor;
    itemCount += line.quantity;
  });
  const cartErrors =
    cart.lineItems.length > cartLimits.maxLineItems
      ? [
          error(
            'CART_LIMIT_EXCEEDED',
            `A cart holds at most ${cartLimits.maxLineItems} line items`,
            `${options.cartPointer ?? ''}/lineItems`,
          ),
        ]
      : [];
  return {
    subTotalMinor,
    lineErrors,
    cartErrors,
    cart: {
      catalogSetId: cart.catalogSetId,
      storeId: cart.storeId,
      currency: catalog.currency,
      lineItems,
      subTotal: money(subTotalMinor),
      itemCount,
      errors: [...cartErrors, ...lineErrors.flat()].slice(0, maxProblemErrors),
    },
  };
}
