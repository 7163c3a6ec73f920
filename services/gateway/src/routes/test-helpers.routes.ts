import {
  guid,
  order,
  subjects,
  testAdvanceInput,
  testResetResult,
  testStoreOrderInput,
  type TestResetResult,
} from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { SANDBOX_TAG } from '../openapi/test-only.js';
import { forwardJson } from './forwarding.js';

const tags = [SANDBOX_TAG];

export interface TestHelperRoutesOptions {
  /** Placing at the own store runs a whole place (validate, authorize, submit): as long. */
  readonly placeTimeoutMs: number;
  /** An advance to cancelled or timeout refunds through the processor: as a payments request. */
  readonly paymentsTimeoutMs: number;
}

/** The services whose test data `POST /v1/test/reset` deletes, each in its own transaction. */
const resetSubjects = [
  subjects.stores.testReset,
  subjects.catalog.testReset,
  subjects.ordering.testReset,
  subjects.payments.testReset,
] as const;

/**
 * The sandbox's test helpers (docs/guide/sandbox.md#test-helpers), test keys only: a live key gets 403
 * FORBIDDEN before the service is asked (`testOnly`, plugins/auth.ts). They have no `area`:
 * both kinds of partner call them, and the services answer who may do what.
 */
export const testHelperRoutes: FastifyPluginAsync<TestHelperRoutesOptions> = async (
  gateway,
  options,
) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.post(
    '/v1/test/orders/:orderId/advance',
    {
      config: { testOnly: true, rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'advanceTestOrder',
        summary: 'Move a test order as its store would',
        description:
          'Test keys only. to is confirmed, preparing, ready, inTransit, completed, cancelled ' +
          'or timeout. The order moves one step at a time through the same status machine as ' +
          'changeOrderStatus, each step a new version with its webhook: a pickup order from ' +
          'pending to completed goes confirmed, preparing, ready, completed; a delivery order ' +
          'also passes inTransit. cancelled is the store’s cancel (a card payment is ' +
          'refunded right after, as a store’s cancel refunds it); timeout, only from pending, ' +
          'ends the acceptance window now and the platform cancels and refunds the order ' +
          '(cancelledBy platform). A move the status ' +
          'machine refuses is 409 ORDER_STATUS_TRANSITION_INVALID. Who may: the commerce ' +
          'partner whose store took the order, or the distribution partner that placed it at ' +
          'a fixture store; any other order, and every live one, is 404 ORDER_NOT_FOUND.',
        params: z.object({ orderId: guid }),
        body: testAdvanceInput,
        response: {
          200: jsonResponse(order, 'The order after the move'),
          ...problemResponses('ORDER_NOT_FOUND', 'ORDER_STATUS_TRANSITION_INVALID'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(
          subjects.ordering.testAdvanceOrder,
          { orderId: request.params.orderId, to: request.body.to },
          request.ctx,
          { timeoutMs: options.paymentsTimeoutMs },
        ),
      ),
  );

  app.post(
    '/v1/test/stores/:storeId/orders',
    {
      config: { testOnly: true, rateClass: 'writes' },
      // A request without a body (and so without a content type) takes every default.
      preValidation: async (request) => {
        if (request.headers['content-type'] === undefined) request.body = {};
      },
      schema: {
        tags,
        operationId: 'placeTestStoreOrder',
        summary: 'Place a test order at your own test store, as a customer would',
        description:
          'Test keys of commerce partners only (a distribution partner gets 403 FORBIDDEN), ' +
          'at one of your own test stores (any other store is 404 STORE_NOT_FOUND). The ' +
          'platform’s sandbox customer places it through the real validate and place, with ' +
          'one of each of the first itemCount items (default 1) of the active catalog that ' +
          'can be ordered now, for PICKUP (DELIVERY_BY_MERCHANT goes to the store’s own ' +
          'address), paid at the store (CARD pays with the succeeding test card). Below the ' +
          'store’s minimum order (minimumOrder, or delivery.minimumOrder for a delivery) their ' +
          'quantities are raised in turn, then further orderable items added, until the ' +
          'subtotal meets it, within the cart limits (at most 999 of an item). Every field ' +
          'is optional: send {} or no body at all. 201 with the Order: pending, or confirmed ' +
          'when the store took it at its submission URL. No active catalog is 404 ' +
          'CATALOGSET_NOT_FOUND. A store that takes no such order now is 400 ORDER_INVALID ' +
          'whose detail names the store setting behind it: closed (availability) or paused ' +
          '(status), not offering the fulfillment type (fulfillmentTypes), a minimum no cart ' +
          'within the limits reaches (errors: MINIMUM_NOT_MET at /cart), nothing orderable now; ' +
          'errors holds validate’s errors for the order it tried. Place’s own failures pass ' +
          'through.',
        params: z.object({ storeId: guid }),
        body: testStoreOrderInput,
        response: {
          201: jsonResponse(order, 'The order, placed: pending, or confirmed by the store'),
          ...problemResponses(
            'ORDER_INVALID',
            'STORE_REJECTED',
            'PAYMENT_DECLINED',
            'PAYMENT_FAILED',
            'STORE_NOT_FOUND',
            'CATALOGSET_NOT_FOUND',
            'PAYMENT_PROCESSOR_UNAVAILABLE',
            'SANDBOX_PROCESSOR_UNVERIFIED',
          ),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply.code(201),
        await bus.requestRaw(
          subjects.ordering.testPlaceStoreOrder,
          { ...request.body, storeId: request.params.storeId },
          request.ctx,
          { timeoutMs: options.placeTimeoutMs },
        ),
      ),
  );

  // No body schema: @fastify/swagger documents any declared body as required, and a reset
  // needs none (one sent, such as {}, is ignored).
  app.post(
    '/v1/test/reset',
    {
      config: { testOnly: true, rateClass: 'writes' },
      schema: {
        tags,
        operationId: 'resetTestData',
        summary: 'Delete all of your test data',
        description:
          'Test keys only. Deletes every row of your test tenant in each service: stores ' +
          'with their item availability, catalogs and ingest runs, the orders you placed and ' +
          'the test orders at your own stores with their events, addresses, your webhook ' +
          "endpoint and its deliveries, your webhook stream's events (the stream and its " +
          'secret stay), cards, charges and refunds; nothing of your live data or of any ' +
          "other partner: another partner's order at your store stays theirs (readable, its " +
          'charge kept, its Idempotency-Key answering it) and leaves your store side. 200 ' +
          'with the rows deleted, by "<service>.<table>". Each service deletes ' +
          'in its own transaction, all four at once: when one fails (503 SERVICE_UNAVAILABLE, ' +
          '504 UPSTREAM_TIMEOUT) the others may have deleted theirs already. A reset is ' +
          'idempotent: retry it. Work in flight (a place still running, an ingest a worker ' +
          'holds, a charge still authorizing) is left to finish; reset again afterwards. No ' +
          'body is needed (one sent, such as {}, is ignored).',
        response: {
          200: jsonResponse(testResetResult, 'The rows deleted, by service and table'),
        },
      },
    },
    async (request) => resetTestData(bus, request.ctx),
  );
};

/**
 * Ask every service to delete the tenant's test data, all at once, and merge their counts
 * (keyed by service, so none collide). Every service gets its request whatever the others
 * answer; the first failure (in service order) is the answer, and a retry deletes the rest.
 */
async function resetTestData(bus: BusClient, ctx: RequestContext): Promise<TestResetResult> {
  const settled = await Promise.allSettled(
    resetSubjects.map((subject) => bus.request(subject, {}, ctx)),
  );
  const deleted: TestResetResult['deleted'] = {};
  for (const outcome of settled) {
    if (outcome.status === 'rejected') throw outcome.reason;
    Object.assign(deleted, outcome.value.deleted);
  }
  return { deleted };
}
