import { subjects, type PricedCart } from '@pcp/contracts';
import {
  AppError,
  handle,
  requirePartner,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { CatalogCache } from '../catalog/catalog-cache.js';
import {
  addItem,
  removeItem,
  updateItem,
  type CartOperationResult,
} from '../domain/cart-operations.js';
import { priceCart } from '../domain/pricing.js';

/**
 * The stateless cart helpers: (cart, operation) → the new cart priced from the store's
 * current CatalogSet. Nothing about the cart is stored.
 */
export function cartHandlers(catalogs: CatalogCache, clock: () => Date): HandlerBinding[] {
  async function apply(operation: CartOperationResult, ctx: RequestContext): Promise<PricedCart> {
    requirePartner(ctx, 'distribution');
    if (!operation.ok) {
      const first = operation.errors[0];
      throw new AppError(operation.errorCode, first?.message ?? 'The cart operation is invalid', {
        errors: operation.errors,
      });
    }
    const { catalog, timezone } = await catalogs.get(operation.cart.storeId, ctx);
    if (operation.cart.catalogSetId !== catalog.catalogSetId) {
      const message = "This is not the store's current CatalogSet; fetch the catalog again";
      throw new AppError('CATALOGSET_NOT_FOUND', message, {
        errors: [{ code: 'CATALOGSET_NOT_FOUND', message, pointer: operation.catalogSetPointer }],
      });
    }
    const priced = priceCart(
      operation.cart,
      { catalog, timezone, at: clock() },
      operation.pointerOf,
      operation.cartPointer,
    );
    if (!priced.ok) {
      const detail =
        priced.errors.length === 1
          ? (priced.errors[0]?.message ?? '')
          : `The cart has ${priced.errors.length} problems`;
      throw new AppError('CART_INVALID', detail, { errors: priced.errors });
    }
    return priced.cart;
  }

  return [
    handle(subjects.ordering.cartAdd, (input, ctx) => apply(addItem(input), ctx)),
    handle(subjects.ordering.cartRemove, (input, ctx) => apply(removeItem(input), ctx)),
    handle(subjects.ordering.cartUpdate, (input, ctx) => apply(updateItem(input), ctx)),
  ];
}
