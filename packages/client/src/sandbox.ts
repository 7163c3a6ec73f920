import { orderableCandidates } from '@pcp/contracts/orderable-items';
import { randomUUID } from 'node:crypto';
import type { PlatformClient } from './client.js';
import type { PlaceOrderRequest } from './place.js';
import { PlatformProblem } from './problem.js';
import { delay, retryAfterMs } from './waiting.js';

/**
 * The platform's fixture stores (docs/guide/sandbox.md#fixture-stores): test-mode distribution partners
 * order at them, and the platform's kitchen moves every order to completion. New York (takes
 * delivery in the US and Canada), London and Tokyo (pickup), in that order. The same ids on
 * every deployment.
 */
export const fixtureStoreIds = [
  '00000000-0000-4000-8000-0000000f1001',
  '00000000-0000-4000-8000-0000000f1002',
  '00000000-0000-4000-8000-0000000f1003',
] as const;

/** Items of a catalog offered to validate at once, the first it lets through is ordered. */
const CANDIDATES = 25;

/** Tries of a read or a validate that the platform answers as retryable (a cold catalog). */
const TRIES = 3;

/**
 * A request's answer: its data, or its ProblemDetail thrown as a PlatformProblem. A retryable
 * answer (503, 504, 429) is asked again after its Retry-After or a second per try, up to
 * TRIES: every request here is a read or a validate, safe to repeat.
 */
async function answered<T>(
  request: () => Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { data, error, response } = await request();
    if (data !== undefined) return data;
    const problem = PlatformProblem.fromResponse(response, error);
    if (!problem.retryable || attempt >= TRIES) throw problem;
    await delay(retryAfterMs(response.headers) ?? attempt * 1_000, undefined);
  }
}

/** No fixture store takes an order now; the message gives each store's reason. */
export class NoFixtureStoreError extends Error {
  override readonly name = 'NoFixtureStoreError';
}

/** A pickup order paid at the store, of the first item validate lets through, at `storeId`. */
async function orderAt(
  client: PlatformClient,
  storeId: string,
  { endUserId, paymentId }: FixtureStoreOrderOptions,
): Promise<PlaceOrderRequest> {
  const store = await answered(() =>
    client.GET('/v1/marketfront/stores/{storeId}', { params: { path: { storeId } } }),
  );
  if (!store.isOpenNow || store.status === 'paused') {
    throw new NoFixtureStoreError(`${store.name}: ${store.isOpenNow ? 'paused' : 'closed now'}`);
  }
  const document = await answered(() =>
    client.GET('/v1/marketfront/stores/{storeId}/catalogset', { params: { path: { storeId } } }),
  );
  const candidates = orderableCandidates(document, CANDIDATES);
  const header = { 'X-End-User-Id': endUserId };
  const payment =
    paymentId === undefined
      ? ({ paymentType: 'PAY_AT_STORE' } as const)
      : ({ paymentType: 'CARD', paymentId } as const);
  const base = {
    fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
    client: { ip: '8.8.4.4', userAgent: 'pcp-sandbox/1' },
    ...payment,
  } as const;
  const cartOf = (itemIds: readonly string[]) => ({
    catalogSetId: document.catalogSetId,
    storeId,
    lineItems: itemIds.map((itemId) => ({ itemId, lineItemId: randomUUID(), quantity: 1 })),
  });
  if (candidates.length === 0)
    throw new NoFixtureStoreError(`${store.name}: no item to order as it is`);
  // One validate finds the candidates that cannot be ordered now (their line's pointer).
  const probe = await answered(() =>
    client.POST('/v1/marketfront/orders/validate', {
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
  if (chosen === undefined)
    throw new NoFixtureStoreError(`${store.name}: nothing can be ordered now`);
  const cart = cartOf([chosen]);
  const priced = await answered(() =>
    client.POST('/v1/marketfront/orders/validate', {
      params: { header },
      body: { ...base, cart },
    }),
  );
  if (!priced.isValid || !priced.amounts) {
    const why = priced.errors.map((error) => `${error.code} ${error.message}`).join('; ');
    throw new NoFixtureStoreError(`${store.name}: the order is not valid (${why})`);
  }
  return { ...base, cart, amounts: { total: priced.amounts.total } };
}

export interface FixtureStoreOrderOptions {
  /** The end user placing it (`X-End-User-Id`). */
  endUserId: string;
  /** A card of the end user's to pay with (CARD); paid at the store when none. */
  paymentId?: string;
}

/**
 * A test order a fixture store takes now (docs/guide/sandbox.md#making-events-happen-pcp-trigger): pickup ASAP, paid at the
 * store or by the card given, one of the first item validate lets through, at the first
 * fixture store open and not paused, with the total validate priced; ready for `placeOrder`
 * by the same end user. Needs a test key (a live key does not see the fixture stores). Throws
 * NoFixtureStoreError when no store takes one now, a PlatformProblem for a refused request.
 */
export async function fixtureStoreOrder(
  client: PlatformClient,
  options: FixtureStoreOrderOptions,
): Promise<{ storeId: string; body: PlaceOrderRequest }> {
  const reasons: string[] = [];
  for (const storeId of fixtureStoreIds) {
    try {
      return { storeId, body: await orderAt(client, storeId, options) };
    } catch (error) {
      if (!(error instanceof NoFixtureStoreError)) throw error;
      reasons.push(error.message);
    }
  }
  throw new NoFixtureStoreError(`No fixture store takes an order now: ${reasons.join('; ')}`);
}
