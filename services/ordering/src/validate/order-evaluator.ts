import {
  deliveryReach,
  maxProblemErrors,
  orderContextAt,
  subjects,
  orderLimits,
  TAX_RATE_DIGITS,
  toMinorUnits,
  toScaledInteger,
  type MarketfrontStore,
  type OrderAddressInput,
  type OrderError,
  type OrderContext,
  type OrderRequest,
  type ResolvedAddress,
  type ValidatedOrder,
} from '@pcp/contracts';
import {
  AppError,
  requireEndUser,
  requirePartner,
  type BusClient,
  type RequestContext,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { CatalogCache, StorePricingData } from '../catalog/catalog-cache.js';
import type { ItemAvailabilityCache, ItemOverrides } from '../catalog/item-availability-cache.js';
import { findAddress } from '../addresses/address.repository.js';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { computeAmounts } from './order-amounts.js';
import { amountInCurrency, checkClient, checkFulfillment } from './order-checks.js';
import { priceCart } from '../catalog/pricing.js';
import { toSavedAddress } from '../addresses/address.handlers.js';
import type { StoreProfileCache } from './store-profile-cache.js';

export interface OrderEvaluatorDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly bus: BusClient;
  readonly catalogs: CatalogCache;
  /** The stores' item availability overrides, at the version each order context names. */
  readonly availability: ItemAvailabilityCache;
  /** Store profiles validate derives its order context from (place never reads them). */
  readonly profiles: StoreProfileCache;
  readonly clock: () => Date;
}

const problem = (code: string, message: string, pointer: string | null): OrderError => ({
  code,
  message,
  pointer,
});

/** A store's lookup failing with `code` becomes that business problem instead of a 4xx. */
async function asProblem<T>(
  lookup: Promise<T>,
  codes: readonly string[],
  toProblem: (error: AppError) => OrderError,
): Promise<T | OrderError> {
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof AppError && codes.includes(error.code)) return toProblem(error);
    throw error;
  }
}

const isProblem = (value: unknown): value is OrderError =>
  typeof value === 'object' && value !== null && 'code' in value && 'pointer' in value;

/** What validation learned: the answer, and what place needs of it. */
export interface OrderEvaluation {
  readonly order: ValidatedOrder;
  /** Problems found beyond the 100 that `order.errors` holds (0 when none were left out). */
  readonly errorsOmitted: number;
  /** The total in minor units of `currency`; meaningful only for a valid order. */
  readonly totalMinor: number;
  readonly currency: string;
  readonly context: OrderContext;
}

export interface EvaluationOptions {
  /**
   * Ask payments whether a CARD order's paymentId is a live card of the end user (validate).
   * Place leaves it off: its authorization refuses a foreign card without the extra call.
   */
  readonly checkPaymentId?: boolean;
  /**
   * Derive the store's order context from this replica's cached profile (validate, a preview)
   * instead of asking stores. Place leaves it off: what charges the card is read live.
   */
  readonly cachedStore?: boolean;
}

export type OrderEvaluator = (
  input: OrderRequest,
  ctx: RequestContext,
  options?: EvaluationOptions,
) => Promise<OrderEvaluation>;

/**
 * Validate (docs/guide/orders.md#validating-an-order), shared by validate and place: writes
 * nothing. The request's shape, its client context and an unknown store are 4xx; every other
 * problem is an element of `errors` at its pointer, and `amounts` is computed only for a valid
 * order.
 */
export function createOrderEvaluator(deps: OrderEvaluatorDeps): OrderEvaluator {
  const { db, bus, catalogs } = deps;

  return async function evaluate(input, ctx, options = {}) {
    requirePartner(ctx, 'distribution');
    const paymentId = options.checkPaymentId ? input.paymentId : undefined;
    // docs/guide/authentication.md#end-users: a paymentId is the end user's, so it needs one (401
    // before anything else).
    if (paymentId !== undefined) requireEndUser(ctx);
    const client = checkClient(input.client);
    if (client) throw new AppError(client.code, client.message, { errors: [client] });
    const now = deps.clock();
    const { storeId } = input.cart;
    const errors: OrderError[] = [];
    const { fulfillment } = input;
    const schedule = checkFulfillment(fulfillment, now);
    errors.push(...schedule.errors);
    const { orderTime } = schedule;
    // An unknown store is the one 404 (every request below fails with it); everything else
    // is a finding.
    const orderContext = options.cachedStore
      ? deps.profiles
          .get(storeId, ctx)
          .then((profile) => orderContextAt(profile, now, orderTime ?? now))
      : bus.request(
          subjects.stores.orderContext,
          { storeId, ...(orderTime ? { at: orderTime.toISOString() } : {}) },
          ctx,
        );

    if (!ctx.paymentTypes?.includes(input.paymentType)) {
      errors.push(
        problem(
          'PAYMENT_TYPE_NOT_ALLOWED',
          `This partner may not take ${input.paymentType} payments`,
          '/paymentType',
        ),
      );
    }
    if ((input.specialInstructions?.length ?? 0) > orderLimits.instructionsMaxLength) {
      errors.push(
        problem(
          'INSTRUCTIONS_TOO_LONG',
          `Special instructions must be at most ${orderLimits.instructionsMaxLength} characters`,
          '/specialInstructions',
        ),
      );
    }

    const [context, delivery, pricingData, card] = await Promise.all([
      orderContext,
      fulfillment.mode === 'DELIVERY_BY_MERCHANT'
        ? resolveDeliveryAddress(fulfillment.address, ctx)
        : undefined,
      asProblem(catalogs.get(storeId, ctx), ['CATALOGSET_NOT_FOUND'], () => catalogSetNotFound()),
      // Only a CARD order charges its paymentId (place ignores it for PAY_AT_STORE).
      paymentId !== undefined && input.paymentType === 'CARD'
        ? bus.request(subjects.payments.cardOwned, { paymentId }, ctx)
        : undefined,
    ]);
    const { store, availability } = context;
    if (card && !card.owned) {
      errors.push(
        problem(
          'PAYMENT_TOKEN_INVALID',
          'No card with this paymentId belongs to the end user',
          '/paymentId',
        ),
      );
    }
    const delivering = fulfillment.mode === 'DELIVERY_BY_MERCHANT';
    if (!store.fulfillmentTypes.includes(fulfillment.mode)) {
      errors.push(
        problem(
          delivering ? 'DELIVERY_UNAVAILABLE' : 'PICKUP_UNAVAILABLE',
          `The store does not offer ${delivering ? 'delivery' : 'pickup'}`,
          '/fulfillment/mode',
        ),
      );
    }
    if (orderTime && !availability.open) {
      errors.push(
        problem(
          'STORE_CLOSED',
          availability.closedReason === 'paused'
            ? 'The store is not taking orders now'
            : 'The store is closed at the order time',
          // The store itself (or the time asked for): null is for a commerce partner's
          // refusal that names no element.
          fulfillment.scheduleType === 'SCHEDULED' ? '/fulfillment/scheduledTime' : '/cart/storeId',
        ),
      );
    }
    let resolvedAddress: ResolvedAddress | null = null;
    if (isProblem(delivery)) errors.push(delivery);
    else if (delivery) {
      resolvedAddress = delivery;
      if (!deliveryReach(store, delivery).deliverable) {
        errors.push(
          problem(
            'DELIVERY_UNAVAILABLE',
            'The store does not deliver there',
            '/fulfillment/address',
          ),
        );
      }
    }

    let cart: ValidatedOrder['cart'] = null;
    let amounts: ValidatedOrder['amounts'] = null;
    let totalMinor = 0;
    let currency = '';
    if (isProblem(pricingData)) errors.push(pricingData);
    else if (input.cart.catalogSetId !== pricingData.catalog.catalogSetId) {
      errors.push(catalogSetNotFound());
    } else {
      // No request when this replica holds the version the context names (an event brought it).
      const overrides = await deps.availability.forOrder(
        storeId,
        context.itemAvailabilityVersion,
        ctx,
      );
      const priced = priceOrder(input, pricingData, overrides, store, orderTime ?? now, errors);
      cart = priced.cart;
      ({ totalMinor, currency } = priced);
      if (errors.length === 0) amounts = priced.amounts;
    }

    const kept = errors.slice(0, maxProblemErrors);
    const errorsOmitted = errors.length - kept.length;
    const order: ValidatedOrder = {
      isValid: errors.length === 0,
      errors: kept,
      ...(errorsOmitted > 0 ? { errorsOmitted } : {}),
      amounts,
      cart,
      fulfillment: {
        mode: fulfillment.mode,
        scheduleType: fulfillment.scheduleType,
        scheduledTime: fulfillment.scheduledTime ?? null,
        address: resolvedAddress,
        deliveryType: delivering ? fulfillment.deliveryType : null,
        instructions: (delivering && fulfillment.instructions) || null,
      },
      client: { ip: input.client?.ip ?? '', userAgent: input.client?.userAgent ?? '' },
      customer: input.customer ?? null,
      paymentType: input.paymentType,
      specialInstructions: input.specialInstructions ?? null,
    };
    return { order, errorsOmitted, totalMinor, currency, context };
  };

  /**
   * The delivery address resolved and geocoded, or the problem with it; whether the store
   * delivers there is computed from the order context's store.
   */
  async function resolveDeliveryAddress(
    address: OrderAddressInput,
    ctx: RequestContext,
  ): Promise<ResolvedAddress | OrderError> {
    if ('addressId' in address) {
      // docs/guide/authentication.md#end-users: a saved address is the end user's, so it needs one.
      const saved = await findAddress(
        db,
        requirePartner(ctx, 'distribution'),
        requireEndUser(ctx),
        address.addressId,
      );
      if (!saved) {
        return problem(
          'ADDRESS_INVALID',
          'No saved address with this addressId belongs to the end user',
          '/fulfillment/address/addressId',
        );
      }
      // Saved already resolved and geocoded.
      const { addressId: _id, createdAt: _at, ...resolved } = toSavedAddress(saved);
      return resolved;
    }
    const located = await asProblem(
      bus.request(subjects.stores.geocode, { address }, ctx),
      ['ADDRESS_INVALID'],
      (error) => problem('ADDRESS_INVALID', error.message, '/fulfillment/address'),
    );
    if (isProblem(located)) return located;
    // Stores geocodes the inline fields as they are; the order keeps them with the point.
    const { latitude, longitude } = located;
    return { ...address, address2: address.address2 ?? null, latitude, longitude };
  }
}

function catalogSetNotFound(): OrderError {
  return problem(
    'CATALOGSET_NOT_FOUND',
    "This is not the store's current CatalogSet; fetch the catalog again",
    '/cart/catalogSetId',
  );
}

/**
 * The store's money (fees, minimums) is in its profile's currency and the cart's in its
 * catalog's; a profile may change currency before a catalog in the new one is active
 * (docs/guide/stores.md#changing-currency). Until both agree no amount of one can be read in
 * the other, so the order is refused.
 */
function currencyMismatch(profileCurrency: string, catalogCurrency: string): OrderError {
  return problem(
    'CURRENCY_MISMATCH',
    `The store now prices in ${profileCurrency} but its CatalogSet is in ${catalogCurrency}; ` +
      `it takes no orders until a CatalogSet in ${profileCurrency} is active`,
    '/cart/catalogSetId',
  );
}

/**
 * A profile amount in minor units of the order's currency, which is the profile's (checked
 * first). Stores wrote it from minor units of that currency, so one that does not convert is
 * a defect: it fails the request, never becomes 0.
 */
function profileMinor(amount: number, currency: string): number {
  const minor = toMinorUnits(amount, currency);
  if (minor === null) throw new Error(`store amount ${amount} does not convert to ${currency}`);
  return minor;
}

/**
 * Price the cart at the order time, then the order's money: precision of the tip and the
 * total the customer saw, the minimum, fees, tax and total. Problems go into `errors`; the
 * amounts are null when the profile's currency is not the catalog's.
 */
function priceOrder(
  input: OrderRequest,
  { catalog, timezone }: StorePricingData,
  overrides: ItemOverrides,
  store: MarketfrontStore,
  at: Date,
  errors: OrderError[],
) {
  // Overrides are read at the order time: an item out until tonight can be scheduled tomorrow.
  const pricing = priceCart(
    input.cart,
    { catalog, orderTime: { at, timezone }, overrides: { until: overrides.until, at } },
    { linePointer: (index) => `/cart/lineItems/${index}` },
  );
  errors.push(...pricing.cartErrors, ...pricing.lineErrors.flat());
  const { currency } = catalog;
  const tip = amountInCurrency(input.tip, currency, '/tip');
  if ('error' in tip) errors.push(tip.error);
  const seenTotal =
    input.amounts === undefined
      ? undefined
      : amountInCurrency(input.amounts.total, currency, '/amounts/total');
  if (seenTotal && 'error' in seenTotal) errors.push(seenTotal.error);
  if (store.currency !== currency) {
    errors.push(currencyMismatch(store.currency, currency));
    return { cart: pricing.cart, amounts: null, totalMinor: 0, currency };
  }

  const delivering = input.fulfillment.mode === 'DELIVERY_BY_MERCHANT';
  const minimum = delivering ? store.delivery?.minimumOrder : store.minimumOrder;
  const minimumMinor = minimum === undefined ? 0 : profileMinor(minimum, currency);
  if (pricing.subTotalMinor < minimumMinor) {
    errors.push(
      problem('MINIMUM_NOT_MET', `The order is below the store minimum of ${minimum}`, '/cart'),
    );
  }
  const taxRatePpm = toScaledInteger(store.taxRate, TAX_RATE_DIGITS);
  if (taxRatePpm === null) throw new Error(`tax rate ${store.taxRate} exceeds its precision`);
  const computed = computeAmounts({
    currency,
    subTotalMinor: pricing.subTotalMinor,
    // A delivery to a store without delivery settings is DELIVERY_UNAVAILABLE already.
    deliveryFeeMinor:
      delivering && store.delivery ? profileMinor(store.delivery.fee, currency) : null,
    taxRatePpm,
    tipMinor: 'minor' in tip ? tip.minor : 0,
  });
  if (seenTotal && 'minor' in seenTotal && seenTotal.minor !== computed.totalMinor) {
    errors.push(
      problem(
        'ORDER_TOTAL_DIFFERENT',
        `The total is now ${computed.amounts.total}; validate again`,
        '/amounts/total',
      ),
    );
  }
  return {
    cart: pricing.cart,
    amounts: computed.amounts,
    totalMinor: computed.totalMinor,
    currency,
  };
}
