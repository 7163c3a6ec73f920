import {
  cartLimits,
  type AddCartItemInput,
  type CartInput,
  type ErrorCode,
  type OrderError,
  type RemoveCartItemInput,
  type UpdateCartItemInput,
} from '@pcp/contracts';

/** The cart to price after an operation, and what the operation touched. */
export interface CartChange {
  readonly cart: CartInput;
  /**
   * The line the operation added or changed: its index in `cart` and where the request
   * sent it. Its problems fail the call; those of other lines are listed in the priced cart.
   */
  readonly touched: { readonly index: number; readonly pointer: string } | undefined;
  /** Where the cart's catalogSetId sits in the request body. */
  readonly catalogSetPointer: string;
}

export type CartOperationResult =
  ({ ok: true } & CartChange) | { ok: false; errorCode: ErrorCode; errors: OrderError[] };

const refuse = (
  errorCode: ErrorCode,
  code: string,
  message: string,
  pointer: string,
): CartOperationResult => ({
  ok: false,
  errorCode,
  errors: [{ code, message, pointer }],
});

/** Add a line; a null cart starts a new one for `storeId` and `catalogSetId`. */
export function addItem(input: AddCartItemInput): CartOperationResult {
  if (input.cart) {
    const { cart } = input;
    if (cart.lineItems.some((line) => line.lineItemId === input.item.lineItemId)) {
      return refuse(
        'CART_INVALID',
        'LINE_ITEM_DUPLICATE',
        'The cart already has a line with this lineItemId',
        '/item/lineItemId',
      );
    }
    if (cart.lineItems.length >= cartLimits.maxLineItems) {
      return refuse(
        'CART_INVALID',
        'CART_LIMIT_EXCEEDED',
        `A cart holds at most ${cartLimits.maxLineItems} line items`,
        '/item',
      );
    }
    return {
      ok: true,
      cart: { ...cart, lineItems: [...cart.lineItems, input.item] },
      touched: { index: cart.lineItems.length, pointer: '/item' },
      catalogSetPointer: '/cart/catalogSetId',
    };
  }
  if (!input.catalogSetId) {
    return refuse(
      'CART_INVALID',
      'CATALOGSET_REQUIRED',
      'A new cart needs the catalogSetId',
      '/catalogSetId',
    );
  }
  if (!input.storeId) {
    return refuse('REQUEST_INVALID', 'REQUIRED', 'A new cart needs the storeId', '/storeId');
  }
  return {
    ok: true,
    cart: { catalogSetId: input.catalogSetId, storeId: input.storeId, lineItems: [input.item] },
    touched: { index: 0, pointer: '/item' },
    catalogSetPointer: '/catalogSetId',
  };
}

function indexOfLine(cart: CartInput, lineItemId: string): number {
  return cart.lineItems.findIndex((line) => line.lineItemId === lineItemId);
}

/** Remove a line; the remaining lines keep their ids and order. */
export function removeItem(input: RemoveCartItemInput): CartOperationResult {
  const removed = indexOfLine(input.cart, input.lineItemId);
  if (removed < 0) {
    return refuse(
      'CART_INVALID',
      'LINE_ITEM_NOT_FOUND',
      'The cart has no line with this lineItemId',
      '/lineItemId',
    );
  }
  return {
    ok: true,
    cart: {
      ...input.cart,
      lineItems: input.cart.lineItems.filter((_, index) => index !== removed),
    },
    touched: undefined,
    catalogSetPointer: '/cart/catalogSetId',
  };
}

/** Set a line's quantity; 0 removes the line. */
export function updateItem(input: UpdateCartItemInput): CartOperationResult {
  const index = indexOfLine(input.cart, input.lineItemId);
  if (index < 0) {
    return refuse(
      'CART_INVALID',
      'LINE_ITEM_NOT_FOUND',
      'The cart has no line with this lineItemId',
      '/lineItemId',
    );
  }
  if (input.quantity === 0) return removeItem(input);
  if (input.quantity < cartLimits.minQuantity || input.quantity > cartLimits.maxQuantity) {
    return refuse(
      'CART_INVALID',
      'QUANTITY_INVALID',
      `Quantity must be 0 (remove) or from ${cartLimits.minQuantity} to ${cartLimits.maxQuantity}`,
      '/quantity',
    );
  }
  return {
    ok: true,
    cart: {
      ...input.cart,
      lineItems: input.cart.lineItems.map((line, at) =>
        at === index ? { ...line, quantity: input.quantity } : line,
      ),
    },
    touched: { index, pointer: `/cart/lineItems/${index}` },
    catalogSetPointer: '/cart/catalogSetId',
  };
}
