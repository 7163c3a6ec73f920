import {
  catalogSetDocument,
  decodePlaceReply,
  orderableCandidates,
  placeOrderRequest,
  recordedPlaceProblem,
  sandboxCustomerEndUserId,
  sandboxCustomerPartnerId,
  subjects,
  type CatalogSetDocument,
  type CommerceStore,
  type Order,
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
   * The order: the first `itemCount` candidates validate finds orderable now, one of each, and
   * the total validate priced (the total a customer would have seen).
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
    const base = {
      fulfillment,
      // Place wants a public address; documentation ranges count as private.
      client: { ip: '8.8.4.4', userAgent: 'pcp-sandbox/1.0' },
      paymentType: input.paymentType ?? 'PAY_AT_STORE',
      ...(paymentId === undefined ? {} : { paymentId }),
    } as const;
    const cartOf = (itemIds: readonly string[]) => ({
      catalogSetId: document.catalogSetId,
      storeId: store.storeId,
      lineItems: itemIds.map((itemId) => ({ itemId, lineItemId: randomUUID(), quantity: 1 })),
    });
    // One validate finds the candidates that cannot be ordered now (their line's pointer).
    const probe = await local.request(
      subjects.ordering.validate,
      { ...base, cart: cartOf(candidates) },
      customer,
    );
    const refused = new Set(
      probe.errors.flatMap((error) => {
        const line = /^\/cart\/lineItems\/(\d+)/.exec(error.pointer ?? '');
        return line ? [Number(line[1])] : [];
      }),
    );
    const chosen = candidates
      .filter((_, index) => !refused.has(index))
      .slice(0, input.itemCount ?? 1);
    if (chosen.length === 0) {
      throw new AppError(
        'ORDER_INVALID',
        'No item of the active catalog can be ordered now (the store or its catalogs are closed, or the items are unavailable)',
        { errors: probe.errors.slice(0, 100) },
      );
    }
    const priced = await local.request(
      subjects.ordering.validate,
      { ...base, cart: cartOf(chosen) },
      customer,
    );
    if (!priced.isValid || !priced.amounts) {
      throw new AppError('ORDER_INVALID', 'The store does not take this order now', {
        errors: priced.errors.slice(0, 100),
      });
    }
    return placeOrderRequest.parse({
      ...base,
      cart: cartOf(chosen),
      amounts: { total: priced.amounts.total },
    });
  }
}
