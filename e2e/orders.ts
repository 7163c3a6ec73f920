/** Order bodies, stores, buyers and the typed client shared by the order tests. */
import {
  createPlatformClient,
  ingestCatalog,
  type PlaceOrderRequest,
  type PlatformClient,
} from '@pcp/client';
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { cartTestCatalog } from '@pcp/testing/cart-catalog';
import { alwaysOpen, storeProfile } from '@pcp/testing/fixtures';
import type { TestPlatform } from '@pcp/testing/platform';
import type { startCatalogHost } from './catalog-host.js';

/**
 * A store of `commerce`, open every day with a minimum order of 5, its profile changed by
 * `profile`, selling the cart test catalog (hosted on `host` and ingested): its id and the
 * catalog's ids.
 */
export async function storeWithSodas(
  commerce: PlatformClient,
  host: Awaited<ReturnType<typeof startCatalogHost>>,
  profile: Record<string, unknown> = {},
): Promise<{
  storeId: string;
  ids: ReturnType<typeof cartTestCatalog>['ids'];
  /** Shown by the PUT that created it (null without an orderSubmissionUrl). */
  orderSubmissionSecret: string | null;
}> {
  const storeId = randomUUID();
  const put = await commerce.PUT('/v1/commerce/stores/{storeId}', {
    params: { path: { storeId } },
    body: storeProfile({ availability: alwaysOpen, minimumOrder: 5, ...profile }),
  });
  expect(put.response.status).toBeLessThan(300);
  const catalog = cartTestCatalog(storeId);
  const ingest = await ingestCatalog(commerce, {
    storeId,
    callbackUrl: host.serveJson(`/${randomUUID()}.json`, catalog.document),
    timeoutMs: 30_000,
  });
  expect(ingest.errors).toEqual([]);
  expect(ingest.status).toBe('succeeded');
  return {
    storeId,
    ids: catalog.ids,
    orderSubmissionSecret: put.data?.orderSubmissionSecret ?? null,
  };
}

/**
 * Ten sodas (19.90) of the cart test catalog, picked up ASAP with a 2.00 tip: 23.64 with
 * the 8.75% tax, paid with the card `paymentId`.
 */
export const sodaOrder = (
  ids: ReturnType<typeof cartTestCatalog>['ids'],
  storeId: string,
  paymentId: string,
  overrides: Partial<PlaceOrderRequest> = {},
): PlaceOrderRequest => ({
  cart: {
    catalogSetId: ids.catalogSetId,
    storeId,
    lineItems: [{ itemId: ids.soda, lineItemId: randomUUID(), quantity: 10 }],
  },
  fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
  client: { ip: '8.8.4.4', userAgent: 'Mozilla/5.0 (test)' },
  paymentType: 'CARD',
  paymentId,
  tip: 2,
  amounts: { total: 23.64 },
  ...overrides,
});

/** A new end user with `cardNumber` vaulted: its id and the card's paymentId. */
export async function newBuyer(client: PlatformClient, cardNumber: string) {
  const endUser = `buyer-${randomUUID()}`;
  const { data, response } = await client.POST('/v1/marketfront/payments/cards', {
    params: { header: { 'X-End-User-Id': endUser } },
    body: { cardNumber, expMonth: 12, expYear: 2035, cvc: '123', cardholderName: 'Pat Doe' },
  });
  if (!data) throw new Error(`vaulting answered ${response.status}`);
  return { endUser, paymentId: data.paymentId };
}

/** One answer exactly as it came over the wire. */
export interface WireAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * The typed client of `apiKey`, which also keeps every answer it got, in order, as it came
 * over the wire: tests of exact HTTP behaviour (a replay byte for byte, the answers of each
 * try `placeOrder` made) read them after driving the platform through the client.
 */
export function recordingClient(baseUrl: string, apiKey: string) {
  const answers: WireAnswer[] = [];
  const byResponse = new WeakMap<Response, WireAnswer>();
  const client = createPlatformClient({
    baseUrl,
    apiKey,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const answer = {
        status: response.status,
        headers: response.headers,
        text: await response.clone().text(),
      };
      answers.push(answer);
      byResponse.set(response, answer);
      return response;
    },
  });
  return {
    client,
    /** Every answer so far; `answers.slice(n)` are those after the first `n`. */
    answers,
    /** The answer a typed call returned as `response`. */
    wireOf(response: Response): WireAnswer {
      const answer = byResponse.get(response);
      if (!answer) throw new Error('not an answer of this client');
      return answer;
    },
  };
}

/**
 * The refund an order's cancel owes, once the refund sweeper settled it (asked here too, so a
 * test need not wait for the sweeper's timer); throws when it is not settled within `ms`.
 */
export async function refundSettled(platform: TestPlatform, orderId: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    await platform.ordering.sweepRefunds();
    const refund = await platform.orderingDb
      .selectFrom('order_refunds')
      .selectAll()
      .where('order_id', '=', orderId)
      .executeTakeFirstOrThrow();
    if (refund.state === 'settled') return refund;
    if (Date.now() > deadline) {
      throw new Error(`the refund of ${orderId} is still owed: ${refund.last_error ?? 'no error'}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
