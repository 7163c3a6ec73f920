import {
  cartLimits,
  type AddCartItemInput,
  type CartInput,
  type ErrorCode,
  type OrderError,
  type RemoveCartItemInput,
  type UpdateCartItemInput,
} from '@pcp/contracts';
import type { LinePointer } from './pricing.js';

/** The cart to price after an operation, and where its parts sit in the request body. */
export interface CartChange {
  readonly cart: CartInput;
  readonly pointerOf: LinePointer;
  readonly cartPointer: string;
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
    const added = cart.lineItems.length;
    return {
      ok: true,
      cart: { ...cart, lineItems: [...cart.lineItems, input.item] },
      pointerOf: (index) => (index === added ? '/item' : `/cart/lineItems/${index}`),
      cartPointer: '/cart',
      catalogSetPointer: '/cart/catalogSetId',
    };
  }
  if (!input.catalogSetId) {
    return refuse(
      'CATALOGSET_REQUIRED',
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
    pointerOf: () => '/item',
    cartPointer: '',
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
    pointerOf: (index) => `/cart/lineItems/${index < removed ? index : index + 1}`,
    cartPointer: '/cart',
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
    pointerOf: (at) => `/cart/lineItems/${at}`,
    cartPointer: '/cart',
    catalogSetPointer: '/cart/catalogSetId',
  };
}
