import {
  guid,
  orderSummaryList,
  orderTimeline,
  partnerOrdersQuery,
  subjects,
} from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

const tags = ['Marketfront: orders'];

/**
 * A distribution partner's orders and each order's timeline:
 * docs/guide/orders.md#listing-your-orders.
 */
export const partnerOrderRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/v1/marketfront/orders',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'listOrders',
        summary: 'List the orders you placed, newest first',
        description:
          'Your orders (of the key’s mode), newest first, all or of one status, as summaries: ' +
          'read one in full with getOrder. limit is 1..100 (default 20). nextCursor is ' +
          'absent on the last page; otherwise send it back as before for the next page (it ' +
          'is opaque; one that was not issued is 400 REQUEST_INVALID at /before, and so is ' +
          'an unknown query parameter).',
        querystring: partnerOrdersQuery,
        response: {
          200: jsonResponse(orderSummaryList, 'A page of your orders, newest first'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.ordering.listOrders, request.query, request.ctx),
      ),
  );

  app.get(
    '/v1/marketfront/orders/:orderId/timeline',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags,
        operationId: 'getOrderTimeline',
        summary: 'An order you placed, step by step',
        description:
          'Every step of the order, oldest first, each with its time (at) and kind: placed; ' +
          'payment (a card order: authorized and captured when placed, refunded once the ' +
          'refund its cancel owes is made); store (accepted, or denied with its reason and the items that ran out); status (each version: ' +
          'its status, previous status, estimatedReadyAt and who cancelled); webhook (each ' +
          'try of each delivery to your endpoint: attempt number, outcome, response status, ' +
          'latency and error). At most 100 status events are listed (versions 1 and 2, then ' +
          'the most recent) and the 200 most recent webhook tries; eventsOmitted counts the ' +
          'ones left out. An ' +
          'order placed by another partner answers 404 ORDER_NOT_FOUND, like an unknown id; ' +
          'a query parameter (it takes none) is 400 REQUEST_INVALID.',
        params: z.object({ orderId: guid }),
        querystring: z.strictObject({}),
        response: {
          200: jsonResponse(orderTimeline, 'The order’s steps, oldest first'),
          ...problemResponses('ORDER_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.ordering.orderTimeline, request.params, request.ctx),
      ),
  );
};
