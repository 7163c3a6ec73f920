import {
  cartLimits,
  type AvailabilityWindow,
  fromMinorUnits,
  isWithinWindows,
  type CartInput,
  type LineItemInput,
  type OrderError,
  type PricedCart,
  type PricedLineItem,
} from '@pcp/contracts';
import type { CompiledCatalog, CompiledItem } from './compiled-catalog.js';

export interface PricingContext {
  readonly catalog: CompiledCatalog;
  /** The store's IANA time zone: catalog windows are read in it. */
  readonly timezone: string;
  /** When the order would be made (now for carts and ASAP, the scheduled time otherwise). */
  readonly at: Date;
}

export type PricingResult =
  { ok: true; cart: PricedCart; subTotalMinor: number } | { ok: false; errors: OrderError[] };

/** Where each line of the cart sits in the request, for pointers (default `/lineItems/i`). */
export type LinePointer = (index: number) => string;

interface LineOutcome {
  unitMinor: number;
  totalMinor: number;
  priced: PricedLineItem;
}

const error = (code: string, message: string, pointer: string): OrderError => ({
  code,
  message,
  pointer,
});

/**
 * Price a cart from a compiled catalog, with no I/O. Every problem becomes an OrderError
 * with an RFC 6901 pointer (all of them, not only the first); money is integer minor units
 * throughout and converted to major units only in the returned cart.
 */
export function priceCart(
  cart: CartInput,
  context: PricingContext,
  pointerOf: LinePointer = (index) => `/lineItems/${index}`,
  cartPointer = '',
): PricingResult {
  const errors: OrderError[] = [];
  const { catalog } = context;
  if (cart.lineItems.length > cartLimits.maxLineItems) {
    errors.push(
      error(
        'CART_LIMIT_EXCEEDED',
        `A cart holds at most ${cartLimits.maxLineItems} line items`,
        `${cartPointer}/lineItems`,
      ),
    );
  }
  const seenLineIds = new Set<string>();
  const money = (minor: number) => fromMinorUnits(minor, catalog.currency);
  // Catalogs share one windows list among all their items: decide each list once per cart.
  const openWindows = new Map<readonly AvailabilityWindow[], boolean>();
  const isOpen = (windows: readonly AvailabilityWindow[]) => {
    let open = openWindows.get(windows);
    if (open === undefined) {
      open = isWithinWindows(windows, context.timezone, context.at);
      openWindows.set(windows, open);
    }
    return open;
  };
  const validQuantity = (quantity: number) =>
    quantity >= cartLimits.minQuantity && quantity <= cartLimits.maxQuantity;

  function priceLine(
    line: LineItemInput,
    pointer: string,
    topLevel: boolean,
  ): LineOutcome | undefined {
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
      return undefined;
    }
    checkAvailability(item, pointer, topLevel);

    const groups: PricedLineItem['modifierGroups'] = [];
    // Options chosen per modifier group of the item (by its index in modifierGroupIds),
    // counted by quantity; a group may be sent in more than one selection.
    const chosen = item.modifierGroupIds.map(() => 0);
    let modifiersMinor = 0;
    const selections = line.modifierGroups ?? [];
    for (let groupIndex = 0; groupIndex < selections.length; groupIndex++) {
      const selection = selections[groupIndex]!;
      const groupPointer = `${pointer}/modifierGroups/${groupIndex}`;
      const slot = item.modifierGroupIds.indexOf(selection.modifierGroupId);
      const group = slot < 0 ? undefined : catalog.modifierGroups.get(selection.modifierGroupId);
      if (!group) {
        errors.push(
          error(
            'MODIFIER_INVALID',
            'This modifier group does not belong to the item',
            `${groupPointer}/modifierGroupId`,
          ),
        );
        continue;
      }
      const options: PricedLineItem[] = [];
      for (let optionIndex = 0; optionIndex < selection.lineItems.length; optionIndex++) {
        const option = selection.lineItems[optionIndex]!;
        const optionPointer = `${groupPointer}/lineItems/${optionIndex}`;
        if (!group.optionIds.has(option.itemId)) {
          errors.push(
            error(
              'MODIFIER_INVALID',
              `This option is not part of ${group.name}`,
              `${optionPointer}/itemId`,
            ),
          );
          continue;
        }
        const priced = priceLine(option, optionPointer, false);
        if (!priced) continue;
        options.push(priced.priced);
        modifiersMinor += priced.totalMinor;
        // An option with a bad quantity is already an error; it must not sway the group's count.
        if (validQuantity(option.quantity)) chosen[slot] = chosen[slot]! + option.quantity;
      }
      if (chosen[slot]! > group.maximumAllowed) {
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
        name: group.name,
        lineItems: options,
      });
    }
    for (let slot = 0; slot < item.modifierGroupIds.length; slot++) {
      const group = catalog.modifierGroups.get(item.modifierGroupIds[slot]!);
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

    const unitMinor = item.priceMinor + modifiersMinor;
    const totalMinor = unitMinor * line.quantity;
    if (!Number.isSafeInteger(totalMinor)) {
      errors.push(error('QUANTITY_INVALID', 'The line total is too large', `${pointer}/quantity`));
    }
    return {
      unitMinor,
      totalMinor,
      priced: {
        itemId: line.itemId,
        lineItemId: line.lineItemId,
        quantity: line.quantity,
        name: item.name,
        unitPrice: money(unitMinor),
        totalPrice: money(totalMinor),
        modifierGroups: groups,
      },
    };
  }

  function checkAvailability(item: CompiledItem, pointer: string, topLevel: boolean) {
    if (!item.available) {
      errors.push(error('ITEM_UNAVAILABLE', `${item.name} is not available`, pointer));
      return;
    }
    // Options need only be available; an ordered item needs an open catalog that lists it.
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

  const lines: PricedLineItem[] = [];
  let subTotalMinor = 0;
  let itemCount = 0;
  cart.lineItems.forEach((line, index) => {
    const outcome = priceLine(line, pointerOf(index), true);
    if (!outcome) return;
    lines.push(outcome.priced);
    subTotalMinor += outcome.totalMinor;
    itemCount += line.quantity;
  });
  if (errors.length > 0) return { ok: false, errors };
  if (!Number.isSafeInteger(subTotalMinor)) {
    return {
      ok: false,
      errors: [
        error('QUANTITY_INVALID', 'The cart total is too large', `${cartPointer}/lineItems`),
      ],
    };
  }
  return {
    ok: true,
    subTotalMinor,
    cart: {
      catalogSetId: cart.catalogSetId,
      storeId: cart.storeId,
      currency: catalog.currency,
      lineItems: lines,
      subTotal: money(subTotalMinor),
      itemCount,
    },
  };
}
