import { orderableCandidates } from '@pcp/contracts/orderable-items';
import { api, ok, type Order } from '../api.js';

/**
 * A test order at a fixture store, as `pcp trigger` places one
 * (docs/guide/sandbox.md#making-events-happen-pcp-trigger): the platform's test helper that
 * places orders (`POST /v1/test/stores/{storeId}/orders`) is a commerce partner's, at its own
 * store, so a distribution partner places through the marketfront API like any order: pickup
 * ASAP, paid at the store, one of the first item validate lets through, at the total it priced.
 */

/** The end user the console's test orders are placed for (`X-End-User-Id`). */
const END_USER = 'pcp-console';
/** Items offered to validate at once; the first it lets through is ordered. */
const CANDIDATES = 25;

function readCatalog(storeId: string) {
  return ok(
    api.GET('/v1/marketfront/stores/{storeId}/catalogset', { params: { path: { storeId } } }),
  );
}

/** Place a test order at the fixture store `storeId`; an Error says why none can be now. */
export async function placeFixtureOrder(storeId: string): Promise<Order> {
  const document = await readCatalog(storeId);
  const candidates = orderableCandidates(document, CANDIDATES);
  if (candidates.length === 0) throw new Error('This store has no item to order as it is.');
  const header = { 'X-End-User-Id': END_USER };
  const base = {
    fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
    client: { ip: '8.8.4.4', userAgent: navigator.userAgent.slice(0, 255) || 'pcp-console' },
    paymentType: 'PAY_AT_STORE',
  } as const;
  const cartOf = (itemIds: readonly string[]) => ({
    catalogSetId: document.catalogSetId,
    storeId,
    lineItems: itemIds.map((itemId) => ({ itemId, lineItemId: crypto.randomUUID(), quantity: 1 })),
  });
  // One validate finds the candidates that cannot be ordered now (their line's pointer).
  const probe = await ok(
    api.POST('/v1/marketfront/orders/validate', {
      params: { header },
      body: { ...base, cart: cartOf(candidates) },
    }),
  );
  const refused = new Set(
    probe.errors.flatMap((error) => {
      const line = /^\/cart\/lineItems\/(\d+)/.exec(error.pointer ?? '');
      return line ? [Number(line[1])] : [];
    }),
  );
  const chosen = candidates.find((_, index) => !refused.has(index));
  if (chosen === undefined) throw new Error('Nothing at this store can be ordered now.');
  const cart = cartOf([chosen]);
  const priced = await ok(
    api.POST('/v1/marketfront/orders/validate', { params: { header }, body: { ...base, cart } }),
  );
  if (!priced.isValid || !priced.amounts) {
    const why = priced.errors.map((error) => `${error.code}: ${error.message}`).join('; ');
    throw new Error(`The order is not valid now (${why}).`);
  }
  return ok(
    api.POST('/v1/marketfront/orders/place', {
      params: { header: { ...header, 'Idempotency-Key': crypto.randomUUID() } },
      body: { ...base, cart, amounts: { total: priced.amounts.total } },
    }),
  );
}
