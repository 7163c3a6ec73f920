import { subjects, type OrderError, type PricedCart } from '@pcp/contracts';
import {
  AppError,
  handle,
  requirePartner,
  type HandlerBinding,
  type RequestContext,
} from '@pcp/service-kit';
import type { CatalogCache, StorePricingData } from '../catalog/catalog-cache.js';
import type { ItemAvailabilityCache } from '../catalog/item-availability-cache.js';
import { compileAcceptsAsIs } from './cart-input-check.js';
import { addItem, removeItem, updateItem, type CartOperationResult } from './cart-operations.js';
import { priceCart } from '../catalog/pricing.js';

/** The one 400 of the cart helpers (docs/guide/carts.md): every problem is an element of it. */
function cartInvalid(errors: OrderError[]): AppError {
  const detail =
    errors.length === 1
      ? (errors[0]?.message ?? 'The cart operation is invalid')
      : `The cart operation has ${errors.length} problems`;
  return new AppError('CART_INVALID', detail, { errors });
}

/**
 * The stateless cart helpers: (cart, operation) → the new cart priced from the store's
 * current CatalogSet. Nothing about the cart is stored. A call fails only for problems in
 * what its operation touches; lines already in the cart that can no longer be priced are
 * listed in the returned cart's `errors`, so a partner can always remove them. Carts have
 * no order time: availability windows are for validate and place. Item availability overrides
 * the store set apply now (docs/guide/carts.md#what-a-call-checks).
 */
export function cartHandlers(
  catalogs: CatalogCache,
  availability: ItemAvailabilityCache,
  clock: () => Date,
): HandlerBinding[] {
  async function apply(operation: CartOperationResult, ctx: RequestContext): Promise<PricedCart> {
    requirePartner(ctx, 'distribution');
    if (!operation.ok) {
      if (operation.errorCode === 'CART_INVALID') throw cartInvalid(operation.errors);
      throw new AppError(operation.errorCode, operation.errors[0]?.message ?? 'Invalid request', {
        errors: operation.errors,
      });
    }
    const catalogSetNotFound = () =>
      cartInvalid([
        {
          code: 'CATALOGSET_NOT_FOUND',
          message: "This is not the store's current CatalogSet; fetch the catalog again",
          pointer: operation.catalogSetPointer,
        },
      ]);
    const { storeId } = operation.cart;
    const [pricingData, overrides] = await Promise.allSettled([
      catalogs.get(storeId, ctx),
      availability.forCart(storeId, ctx),
    ]);
    if (pricingData.status === 'rejected') {
      const error: unknown = pricingData.reason;
      // A store without a catalog has no current CatalogSet; an unknown store stays a 404.
      if (error instanceof AppError && error.code === 'CATALOGSET_NOT_FOUND') {
        throw catalogSetNotFound();
      }
      throw error;
    }
    const store: StorePricingData = pricingData.value;
    if (operation.cart.catalogSetId !== store.catalog.catalogSetId) throw catalogSetNotFound();
    if (overrides.status === 'rejected') throw overrides.reason;

    const pricing = priceCart(operation.cart, {
      catalog: store.catalog,
      overrides: { until: overrides.value.until, at: clock() },
    });
    const { touched } = operation;
    const touchedErrors = touched ? (pricing.lineErrors[touched.index] ?? []) : [];
    if (touched && touchedErrors.length > 0) {
      // Pointers into the returned cart (/lineItems/i/…), moved to where the request sent the line.
      const pricedAt = `/lineItems/${touched.index}`;
      throw cartInvalid(
        touchedErrors.map((problem) => ({
          ...problem,
          pointer: problem.pointer && touched.pointer + problem.pointer.slice(pricedAt.length),
        })),
      );
    }
    return pricing.cart;
  }

  const { cartAdd, cartRemove, cartUpdate } = subjects.ordering;
  return [
    handle(cartAdd, (input, ctx) => apply(addItem(input), ctx), {
      acceptsAsIs: compileAcceptsAsIs(cartAdd.request),
    }),
    handle(cartRemove, (input, ctx) => apply(removeItem(input), ctx), {
      acceptsAsIs: compileAcceptsAsIs(cartRemove.request),
    }),
    handle(cartUpdate, (input, ctx) => apply(updateItem(input), ctx), {
      acceptsAsIs: compileAcceptsAsIs(cartUpdate.request),
    }),
  ];
}
