import {
  guid,
  order,
  orderStatusChange,
  storeOrderList,
  storeOrdersQuery,
  subjects,
} from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

const commerceTags = ['Commerce: orders'];
const marketfrontTags = ['Marketfront: orders'];

export interface OrderLifecycleRoutesOptions {
  /** A cancel refunds through the payment processor: as long as a payments request. */
  readonly statusChangeTimeoutMs: number;
}

/**
 * Reading an order (marketfront), a store's orders and moving them (commerce):
 * docs/guide/orders.md#order-status.
 */
export const orderLifecycleRoutes: FastifyPluginAsync<OrderLifecycleRoutesOptions> = async (
  gateway,
  options,
) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/v1/marketfront/orders/:orderId',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags: marketfrontTags,
        operationId: 'getOrder',
        summary: 'Read an order you placed',
        description:
          'The order as it stands now: state, status, version (one more for each change, as ' +
          'in its webhooks), estimatedReadyAt (set at placement, moved by the store), acceptBy ' +
          '(until when a pending order may be confirmed; null once accepted), cancelReason and ' +
          'cancelledBy (store, or platform when it was not accepted in time). An order placed ' +
          'by another partner answers 404 ORDER_NOT_FOUND, like an unknown id.',
        params: z.object({ orderId: guid }),
        response: {
          200: jsonResponse(order, 'The order as it stands now'),
          ...problemResponses('ORDER_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.ordering.getOrder, request.params, request.ctx),
      ),
  );

  app.get(
    '/v1/commerce/stores/:storeId/orders',
    {
      config: { area: 'commerce', rateClass: 'reads' },
      schema: {
        tags: commerceTags,
        operationId: 'listStoreOrders',
        summary: 'List a store’s orders, newest first',
        description:
          'Orders of one of your stores, newest first, all or of one status. limit is 1..100 ' +
          '(default 20). nextCursor is null on the last page; otherwise send it back as cursor ' +
          'for the next page (it is opaque; one that was not issued is 400 REQUEST_INVALID at ' +
          '/cursor). A store that is not yours answers 404 STORE_NOT_FOUND. A pending order ' +
          'carries acceptBy: confirm or deny it before then, or the platform cancels it.',
        params: z.object({ storeId: guid }),
        querystring: storeOrdersQuery,
        response: {
          200: jsonResponse(storeOrderList, 'A page of the store’s orders, newest first'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(
          subjects.ordering.listStoreOrders,
          { ...request.query, storeId: request.params.storeId },
          request.ctx,
        ),
      ),
  );

  app.post(
    '/v1/commerce/orders/:orderId/status',
    {
      config: { area: 'commerce', rateClass: 'writes' },
      schema: {
        tags: commerceTags,
        operationId: 'changeOrderStatus',
        summary: 'Move an order of your store along its status',
        description:
          'A step sends {status} (pending → confirmed → preparing → ready, then inTransit for ' +
          'delivery), optionally with estimatedReadyAt; finishing sends {state: "completed"} ' +
          '(from ready for pickup, from inTransit for delivery); cancelling sends ' +
          '{state: "cancelled", cancelReason} (1..500 characters) while the order is open and ' +
          'not in transit: the order is cancelled and the refund of a card payment owed at ' +
          'once, the refund made right after (asked again until the processor makes it), and ' +
          'a cancel sent again answers the order as the first left it. A pending order is ' +
          'confirmed before its ' +
          'acceptBy or the platform cancels it (cancelledBy platform): a move that comes after ' +
          'the deadline is 409 ORDER_STATUS_TRANSITION_INVALID. Denying a pending order may ' +
          'carry unavailableItemIds (1..100 items of its catalog): those items are unavailable ' +
          'until the end of the store’s local day; an id the store’s catalog lacks is 400 ' +
          'REQUEST_INVALID at /unavailableItemIds/<i>, and unavailableItemIds on an order that ' +
          'is no longer pending is 409. Sending the current status again changes nothing ' +
          'unless it brings another estimatedReadyAt. Any other move is 409 ' +
          'ORDER_STATUS_TRANSITION_INVALID. Each change is a new version and an ' +
          'order.status_changed (or order.cancelled) webhook carrying estimatedReadyAt, ' +
          'cancelReason and cancelledBy. An order of another partner’s store answers 404 ' +
          'ORDER_NOT_FOUND.',
        params: z.object({ orderId: guid }),
        body: orderStatusChange,
        response: {
          200: jsonResponse(
            order,
            'The order after the move (unchanged when it was already there)',
          ),
          ...problemResponses('ORDER_NOT_FOUND', 'ORDER_STATUS_TRANSITION_INVALID'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(
          subjects.ordering.changeOrderStatus,
          { orderId: request.params.orderId, change: request.body },
          request.ctx,
          { timeoutMs: options.statusChangeTimeoutMs },
        ),
      ),
  );
};
