import { z } from 'zod';
import { catalogLimits } from './catalog.js';
import { guid, maxProblemErrors, orderError } from './common.js';
import { cartExample, exampleIds, pricedCartExample } from './examples.js';

/** A line item as partners send it; `name`, `unitPrice` and `totalPrice` are computed. */
export interface LineItemInput {
  itemId: string;
  lineItemId: string;
  quantity: number;
  modifierGroups?: { modifierGroupId: string; lineItems: LineItemInput[] }[] | undefined;
}

/** Cart limits (docs/guide/carts.md): lines per cart and the quantity of a line. */
export const cartLimits = { maxLineItems: 100, minQuantity: 1, maxQuantity: 999 } as const;

/** Bounds for hostile input; business limits (above) are reported as element errors. */
const MAX_ARRAY = 1_000;
const int32 = z.number().int().min(-2_147_483_648).max(2_147_483_647);

/**
 * LineItem, nested `depth` levels of modifiers deep. Built level by level (not recursive),
 * so a hostile, deeply nested body is refused by validation instead of exhausting the stack.
 */
function lineItemAt(depth: number): z.ZodType<LineItemInput> {
  const base = { itemId: guid, lineItemId: guid, quantity: int32 };
  if (depth === 0) {
    return z.object({
      ...base,
      modifierGroups: z
        .array(z.never())
        .max(0, `Modifiers nest at most ${catalogLimits.maxModifierDepth} levels`)
        .optional(),
    });
  }
  return z.object({
    ...base,
    modifierGroups: z
      .array(
        z.object({
          modifierGroupId: guid,
          lineItems: z.array(lineItemAt(depth - 1)).max(MAX_ARRAY),
        }),
      )
      .max(MAX_ARRAY)
      .optional(),
  });
}

export const lineItemInput = lineItemAt(catalogLimits.maxModifierDepth);

/** A cart as partners send it (client-managed; read-only computed fields are ignored). */
export const cartInput = z.object({
  catalogSetId: guid,
  storeId: guid,
  lineItems: z.array(lineItemInput).max(MAX_ARRAY),
});
export type CartInput = z.infer<typeof cartInput>;

export const addCartItemInput = z
  .object({
    item: lineItemInput,
    cart: cartInput.nullable().optional(),
    catalogSetId: guid.nullable().optional(),
    storeId: guid.nullable().optional(),
  })
  .meta({
    examples: [
      {
        item: cartExample.lineItems[0],
        cart: null,
        catalogSetId: exampleIds.catalogSet,
        storeId: exampleIds.store,
      },
    ],
  });
export type AddCartItemInput = z.infer<typeof addCartItemInput>;

export const removeCartItemInput = z
  .object({ cart: cartInput, lineItemId: guid })
  .meta({ examples: [{ cart: cartExample, lineItemId: exampleIds.line }] });
export type RemoveCartItemInput = z.infer<typeof removeCartItemInput>;

export const updateCartItemInput = z
  .object({ cart: cartInput, lineItemId: guid, quantity: int32 })
  .meta({ examples: [{ cart: cartExample, lineItemId: exampleIds.line, quantity: 3 }] });
export type UpdateCartItemInput = z.infer<typeof updateCartItemInput>;

/**
 * A priced line: the input plus its name, unit price (item + modifiers) and total. A line
 * that cannot be priced (its item gone from the catalog, unavailable, its choices no longer
 * valid) has null prices, and the cart's `errors` says why.
 */
export interface PricedLineItem {
  itemId: string;
  lineItemId: string;
  quantity: number;
  name: string | null;
  unitPrice: number | null;
  totalPrice: number | null;
  modifierGroups: {
    modifierGroupId: string;
    name: string | null;
    lineItems: PricedLineItem[];
  }[];
}

const pricedLineItem: z.ZodType<PricedLineItem> = z
  .object({
    itemId: guid,
    lineItemId: guid,
    quantity: z.number().int(),
    name: z.string().nullable(),
    unitPrice: z.number().nullable(),
    totalPrice: z.number().nullable(),
    get modifierGroups() {
      return z.array(
        z.object({
          modifierGroupId: guid,
          name: z.string().nullable(),
          lineItems: z.array(pricedLineItem),
        }),
      );
    },
  })
  .meta({ id: 'PricedLineItem' });

/**
 * A cart priced from the store's current CatalogSet (docs/guide/carts.md#errors). `errors` lists
 * the lines already in the cart that can no longer be priced (at most 100): they are left out of
 * `subTotal` and `itemCount`, and can always be removed.
 */
export const pricedCart = z
  .object({
    catalogSetId: guid,
    storeId: guid,
    currency: z.string(),
    lineItems: z.array(pricedLineItem),
    subTotal: z.number(),
    itemCount: z.number().int(),
    errors: z.array(orderError).max(maxProblemErrors),
  })
  .meta({ id: 'PricedCart', examples: [pricedCartExample] });
export type PricedCart = z.infer<typeof pricedCart>;
