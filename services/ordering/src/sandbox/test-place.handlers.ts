import {
  cartLimits,
  catalogSetDocument,
  decodePlaceReply,
  fromMinorUnits,
  orderableCandidates,
  placeOrderRequest,
  recordedPlaceProblem,
  sandboxCustomerEndUserId,
  sandboxCustomerPartnerId,
  subjects,
  toMinorUnits,
  type CatalogSetDocument,
  type CommerceStore,
  type Order,
  type OrderError,
  type OrderRequest,
  type PlaceOrderRequest,
  type TestStoreOrderInput,
} from '@pcp/contracts';
import {
  AppError,
  handle,
  readChunks,
  requireTestPartner,
  type BusClient,
  type HandlerBinding,
  type LocalSubjects,
  type RequestContext,
} from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import type { PlaceOrder } from '../place/place.handlers.js';
import { planOrderLines, type OrderLine } from './order-lines.js';

/** Items tried per order: the first ones the catalog lists that validate lets through. */
const CANDIDATES = 25;

/**
 * `POST /v1/test/stores/{storeId}/orders` (docs/guide/sandbox.md#placing-an-order-at-your-store): a
 * test order at the calling commerce partner's own store, placed as a customer would, through
 * the real validate and place (idempotency, store context, acceptance window, the store's
 * order submission URL), by the platform's sandbox customer.
 */
export function testPlaceHandler(deps: {
  readonly bus: BusClient;
  /** Ordering's own validate and order read, in-process. */
  readonly local: LocalSubjects;
  /** Ordering's own place, in-process. */
  readonly place: PlaceOrder;
}): HandlerBinding {
  const { bus, local, place } = deps;

  return handle(subjects.ordering.testPlaceStoreOrder, async (input, ctx) => {
    const partnerId = requireTestPartner(ctx);
    if (ctx.partnerKind !== 'commerce') {
      throw new AppError('FORBIDDEN', 'Only a commerce partner places orders at its own store');
    }
    // STORE_NOT_FOUND unless the store is the caller's (and of its mode).
    const store = await bus.request(subjects.stores.get, { storeId: input.storeId }, ctx);
    const document = await activeDocument(input.storeId, ctx);
    const paymentType = input.paymentType ?? 'PAY_AT_STORE';
    const customer: RequestContext = {
      requestId: ctx.requestId,
      partnerId: sandboxCustomerPartnerId,
      partnerKind: 'distribution',
      mode: 'test',
      endUserId: sandboxCustomerEndUserId(partnerId),
      paymentTypes: ['CARD', 'PAY_AT_STORE'],
      ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
      ...(ctx.tracestate ? { tracestate: ctx.tracestate } : {}),
    };
    const paymentId = paymentType === 'CARD' ? await testCard(customer) : undefined;
    const request = await orderOf(store, document, input, customer, paymentId);
    const { head, recorded } = decodePlaceReply(
      await place(request, { ...customer, idempotencyKey: randomUUID() }),
    );
    if (head.status >= 300) {
      const problem = recordedPlaceProblem.parse(JSON.parse(Buffer.from(recorded).toString()));
      throw new AppError(problem.errorCode as AppError['code'], problem.detail, {
        ...(problem.errors ? { errors: problem.errors } : {}),
      });
    }
    const order = await local.request(
      subjects.ordering.getOrder,
      { orderId: head.orderId ?? '' },
      customer,
    );
    return order satisfies Order;
  });

  /** The store's active CatalogSet, read chunk by chunk (CATALOGSET_NOT_FOUND before one). */
  async function activeDocument(storeId: string, ctx: RequestContext) {
    const described = await bus.request(subjects.catalog.document, { storeId }, ctx);
    const parts: Uint8Array[] = [];
    for await (const chunk of readChunks(described.chunks, (index) =>
      bus.requestRaw(
        subjects.catalog.documentChunk,
        { versionId: described.versionId, index },
        ctx,
      ),
    )) {
      parts.push(chunk);
    }
    const parsed: CatalogSetDocument = catalogSetDocument.parse(
      JSON.parse(Buffer.concat(parts).toString('utf8')),
    );
    return parsed;
  }

  /** The sandbox customer's succeeding test card (asking again keeps its paymentId). */
  async function testCard(customer: RequestContext): Promise<string> {
    return (await bus.request(subjects.payments.sandboxCustomerCard, {}, customer)).paymentId;
  }

  /**
   * The order: one each of the first `itemCount` candidates validate finds orderable now, more
   * of them (or further candidates) until the subtotal meets the store's minimum order, and the
   * total validate priced (the total a customer would have seen). ORDER_INVALID naming the
   * store setting when the store takes no such order.
   */
  async function orderOf(
    store: CommerceStore,
    document: CatalogSetDocument,
    input: TestStoreOrderInput & { storeId: string },
    customer: RequestContext,
    paymentId: string | undefined,
  ): Promise<PlaceOrderRequest> {
    const candidates = orderableCandidates(document, CANDIDATES);
    if (candidates.length === 0) {
      throw new AppError(
        'ORDER_INVALID',
        'The active catalog has no available item without required modifiers to order',
      );
    }
    const fulfillment: OrderRequest['fulfillment'] =
      (input.fulfillmentType ?? 'PICKUP') === 'PICKUP'
        ? { mode: 'PICKUP', scheduleType: 'ASAP' }
        : {
            mode: 'DELIVERY_BY_MERCHANT',
            scheduleType: 'ASAP',
            deliveryType: 'DOOR_TO_DOOR',
            address: {
              address1: store.address.address1,
              address2: store.address.address2 ?? null,
              city: store.address.city,
              state: store.address.state,
              postalCode: store.address.postalCode,
              country: store.address.country,
            },
          };
    const delivering = fulfillment.mode === 'DELIVERY_BY_MERCHANT';
    const base = {
      fulfillment,
      // Place wants a public address; documentation ranges count as private.
      client: { ip: '8.8.4.4', userAgent: 'pcp-sandbox/1.0' },
      paymentType: input.paymentType ?? 'PAY_AT_STORE',
      ...(paymentId === undefined ? {} : { paymentId }),
    } as const;
    const cartOf = (lines: readonly OrderLine[]) => ({
      catalogSetId: document.catalogSetId,
      storeId: store.storeId,
      lineItems: lines.map(({ itemId, quantity }) => ({
        itemId,
        lineItemId: randomUUID(),
        quantity,
      })),
    });
    const minimumSetting = delivering ? 'delivery.minimumOrder' : 'minimumOrder';
    /** ORDER_INVALID with validate's errors, each naming the store setting behind it. */
    const refused = (errors: readonly OrderError[]) => {
      const reasons = errors.map((error) => {
        const setting = settingBehind(error, store, minimumSetting);
        return setting ? `${error.message} (store setting: ${setting})` : error.message;
      });
      return new AppError(
        'ORDER_INVALID',
        `The store does not take this order now: ${reasons.join('; ')}`,
        { errors },
      );
    };
    // One validate finds the candidates that cannot be ordered now (their line's pointer),
    // what keeps the store from taking any order, and each candidate's price.
    const probe = await local.request(
      subjects.ordering.validate,
      { ...base, cart: cartOf(candidates.map((itemId) => ({ itemId, quantity: 1 }))) },
      customer,
    );
    const lineOf = (error: OrderError) => /^\/cart\/lineItems\/(\d+)/.exec(error.pointer ?? '');
    // The minimum is met below, with more of the items.
    const storeErrors = probe.errors.filter(
      (error) => !lineOf(error) && error.code !== 'MINIMUM_NOT_MET',
    );
    if (storeErrors.length > 0) throw refused(storeErrors);
    const refusedLines = new Set(
      probe.errors.flatMap((error) => {
        const line = lineOf(error);
        return line ? [Number(line[1])] : [];
      }),
    );
    const currency = probe.cart?.currency ?? store.currency;
    const orderable = candidates.flatMap((itemId, index) => {
      const unitPrice = probe.cart?.lineItems[index]?.unitPrice;
      if (refusedLines.has(index) || unitPrice === null || unitPrice === undefined) return [];
      return [{ itemId, unitMinor: minorOf(unitPrice, currency) }];
    });
    if (orderable.length === 0) {
      throw new AppError(
        'ORDER_INVALID',
        'No item of the active catalog can be ordered now (outside its catalogs’ availability windows, or unavailable)',
        { errors: probe.errors },
      );
    }
    const minimum = (delivering ? store.delivery?.minimumOrder : store.minimumOrder) ?? 0;
    const planned = planOrderLines(orderable, input.itemCount ?? 1, minorOf(minimum, currency));
    if (!planned.met) {
      const most = fromMinorUnits(planned.mostMinor, currency);
      throw new AppError(
        'ORDER_INVALID',
        `No order meets the store's ${minimumSetting} of ${minimum} ${currency}: its items ` +
          `orderable now come to at most ${most} ${currency} within the cart limits ` +
          `(at most ${cartLimits.maxQuantity} of each)`,
        {
          errors: [
            {
              code: 'MINIMUM_NOT_MET',
              message: `The order is below the store's ${minimumSetting} of ${minimum}, and no cart within the limits reaches it`,
              pointer: '/cart',
            },
          ],
        },
      );
    }
    const cart = cartOf(planned.lines);
    const priced = await local.request(subjects.ordering.validate, { ...base, cart }, customer);
    if (!priced.isValid || !priced.amounts) throw refused(priced.errors);
    return placeOrderRequest.parse({
      ...base,
      cart,
      amounts: { total: priced.amounts.total },
    });
  }
}

/** The store profile field behind a problem validate found with the store, when one is. */
function settingBehind(
  error: OrderError,
  store: CommerceStore,
  minimumSetting: string,
): string | undefined {
  switch (error.code) {
    case 'STORE_CLOSED':
      return store.status === 'paused' ? 'status' : 'availability, or its special hours';
    case 'PICKUP_UNAVAILABLE':
      return 'fulfillmentTypes';
    case 'DELIVERY_UNAVAILABLE':
      if (error.pointer === '/fulfillment/mode') return 'fulfillmentTypes';
      return store.delivery ? 'delivery.radiusMeters' : 'delivery';
    case 'MINIMUM_NOT_MET':
      return minimumSetting;
    case 'CURRENCY_MISMATCH':
      return 'currency';
    default:
      return undefined;
  }
}

/** An amount validate or the store gave, in minor units of `currency` (they always convert). */
function minorOf(amount: number, currency: string): number {
  const minor = toMinorUnits(amount, currency);
  if (minor === null) throw new Error(`amount ${amount} does not convert to ${currency}`);
  return minor;
}
