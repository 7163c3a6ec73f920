import type { CartInput, LineItemInput } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import {
  addItem,
  removeItem,
  updateItem,
  type CartOperationResult,
} from '../../src/carts/cart-operations.js';

/** A canonical uuid for a small number, readable in failures. */
function uuid(n: number): string {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

const STORE = uuid(1);
const CATALOG_SET = uuid(2);
const SODA = uuid(10);
const BURGER = uuid(11);

function line(n: number, quantity = 1, itemId = SODA): LineItemInput {
  return { itemId, lineItemId: uuid(1000 + n), quantity };
}

function cartWith(...lineItems: LineItemInput[]): CartInput {
  return { catalogSetId: CATALOG_SET, storeId: STORE, lineItems };
}

function changed(result: CartOperationResult) {
  if (!result.ok) throw new Error(`expected a change, got ${JSON.stringify(result.errors)}`);
  return result;
}

function refused(result: CartOperationResult) {
  if (result.ok) throw new Error('expected a refusal');
  return {
    errorCode: result.errorCode,
    errors: result.errors.map(({ code, pointer }) => ({ code, pointer })),
  };
}

describe('addItem', () => {
  it('starts a new cart from storeId and catalogSetId when the cart is null', () => {
    const item = line(1);
    const result = changed(
      addItem({ cart: null, item, storeId: STORE, catalogSetId: CATALOG_SET }),
    );
    expect(result.cart).toEqual(cartWith(item));
    expect(result.touched).toEqual({ index: 0, pointer: '/item' });
    expect(result.catalogSetPointer).toBe('/catalogSetId');
  });

  it('starts a new cart when the cart is absent', () => {
    const item = line(1);
    const result = changed(addItem({ item, storeId: STORE, catalogSetId: CATALOG_SET }));
    expect(result.cart).toEqual(cartWith(item));
  });

  it.each([
    ['null', null],
    ['absent', undefined],
  ])('CATALOGSET_REQUIRED at /catalogSetId for a new cart with %s catalogSetId', (_, value) => {
    expect(
      refused(addItem({ cart: null, item: line(1), storeId: STORE, catalogSetId: value })),
    ).toEqual({
      errorCode: 'CART_INVALID',
      errors: [{ code: 'CATALOGSET_REQUIRED', pointer: '/catalogSetId' }],
    });
  });

  it('REQUEST_INVALID at /storeId for a new cart without storeId', () => {
    const result = refused(
      addItem({ cart: null, item: line(1), catalogSetId: CATALOG_SET, storeId: null }),
    );
    expect(result.errorCode).toBe('REQUEST_INVALID');
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]!.pointer).toBe('/storeId');
  });

  it('appends to an existing cart; the added line is the one touched, at /item', () => {
    const existing = cartWith(line(1), line(2, 3, BURGER));
    const item = line(3, 2);
    const result = changed(addItem({ cart: existing, item }));
    expect(result.cart).toEqual(cartWith(line(1), line(2, 3, BURGER), item));
    expect(result.touched).toEqual({ index: 2, pointer: '/item' });
    expect(result.catalogSetPointer).toBe('/cart/catalogSetId');
    expect(existing.lineItems).toHaveLength(2); // the input is not mutated
  });

  it('adds the first line to an existing empty cart at /item', () => {
    const result = changed(addItem({ cart: cartWith(), item: line(1) }));
    expect(result.cart.lineItems).toEqual([line(1)]);
    expect(result.touched).toEqual({ index: 0, pointer: '/item' });
  });

  it('keeps the existing cart ids even when other ids are passed', () => {
    const result = changed(
      addItem({ cart: cartWith(), item: line(1), storeId: uuid(99), catalogSetId: uuid(98) }),
    );
    expect(result.cart).toMatchObject({ storeId: STORE, catalogSetId: CATALOG_SET });
  });

  it('CART_LIMIT_EXCEEDED at /item for a 101st line (the 100th is fine)', () => {
    const ninetyNine = cartWith(...Array.from({ length: 99 }, (_, n) => line(n + 1)));
    const hundred = changed(addItem({ cart: ninetyNine, item: line(100) }));
    expect(hundred.cart.lineItems).toHaveLength(100);
    expect(refused(addItem({ cart: hundred.cart, item: line(101) }))).toEqual({
      errorCode: 'CART_INVALID',
      errors: [{ code: 'CART_LIMIT_EXCEEDED', pointer: '/item' }],
    });
  });

  it('LINE_ITEM_DUPLICATE at /item/lineItemId for a lineItemId already in the cart', () => {
    const result = refused(addItem({ cart: cartWith(line(1), line(2)), item: line(2, 5) }));
    expect(result).toEqual({
      errorCode: 'CART_INVALID',
      errors: [{ code: 'LINE_ITEM_DUPLICATE', pointer: '/item/lineItemId' }],
    });
  });
});

describe('removeItem', () => {
  it('removes the line and keeps the others in order', () => {
    const cart = cartWith(line(1), line(2), line(3));
    const result = changed(removeItem({ cart, lineItemId: uuid(1002) }));
    expect(result.cart).toEqual(cartWith(line(1), line(3)));
    expect(cart.lineItems).toHaveLength(3);
  });

  it('touches no remaining line: their problems never fail a remove', () => {
    const cart = cartWith(line(1), line(2), line(3), line(4));
    const result = changed(removeItem({ cart, lineItemId: uuid(1001) }));
    expect(result.cart).toEqual(cartWith(line(2), line(3), line(4)));
    expect(result.touched).toBeUndefined();
    expect(result.catalogSetPointer).toBe('/cart/catalogSetId');
  });

  it('removing the last line leaves an empty cart', () => {
    const result = changed(removeItem({ cart: cartWith(line(1)), lineItemId: uuid(1001) }));
    expect(result.cart).toEqual(cartWith());
  });

  it('LINE_ITEM_NOT_FOUND at /lineItemId for an unknown id', () => {
    expect(refused(removeItem({ cart: cartWith(line(1)), lineItemId: uuid(1999) }))).toEqual({
      errorCode: 'CART_INVALID',
      errors: [{ code: 'LINE_ITEM_NOT_FOUND', pointer: '/lineItemId' }],
    });
  });
});

describe('updateItem', () => {
  it('sets the quantity of one line, the one touched, at /cart/lineItems/i', () => {
    const result = changed(
      updateItem({ cart: cartWith(line(1), line(2)), lineItemId: uuid(1002), quantity: 7 }),
    );
    expect(result.cart).toEqual(cartWith(line(1), line(2, 7)));
    expect(result.touched).toEqual({ index: 1, pointer: '/cart/lineItems/1' });
  });

  it.each([1, 999])('accepts quantity %d', (quantity) => {
    const result = changed(
      updateItem({ cart: cartWith(line(1)), lineItemId: uuid(1001), quantity }),
    );
    expect(result.cart.lineItems[0]!.quantity).toBe(quantity);
  });

  it('quantity 0 removes the line and touches no other', () => {
    const cart = cartWith(line(1), line(2), line(3));
    const result = changed(updateItem({ cart, lineItemId: uuid(1001), quantity: 0 }));
    expect(result.cart).toEqual(cartWith(line(2), line(3)));
    expect(result.touched).toBeUndefined();
  });

  it.each([-1, 1000, 2_147_483_647, -2_147_483_648])(
    'QUANTITY_INVALID at /quantity for quantity %d',
    (quantity) => {
      expect(
        refused(updateItem({ cart: cartWith(line(1)), lineItemId: uuid(1001), quantity })),
      ).toEqual({
        errorCode: 'CART_INVALID',
        errors: [{ code: 'QUANTITY_INVALID', pointer: '/quantity' }],
      });
    },
  );

  it.each([0, 5])(
    'LINE_ITEM_NOT_FOUND at /lineItemId for an unknown id (quantity %d)',
    (quantity) => {
      expect(
        refused(updateItem({ cart: cartWith(line(1)), lineItemId: uuid(1999), quantity })),
      ).toEqual({
        errorCode: 'CART_INVALID',
        errors: [{ code: 'LINE_ITEM_NOT_FOUND', pointer: '/lineItemId' }],
      });
    },
  );
});
