import { orderRequest, subjects, validatedOrder } from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { forwardBody, problemResponses, registerForwardingRoutes } from './route-config.js';

const tags = ['Marketfront: orders'];

export function registerOrderRoutes(
  gateway: FastifyInstance,
  bus: BusClient,
  contextOf: (request: FastifyRequest) => RequestContext,
): void {
  registerForwardingRoutes(gateway, (scope) =>
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/v1/marketfront/orders/validate',
      {
        config: { area: 'distribution', rateClass: 'reads' },
        schema: {
          tags,
          operationId: 'validateOrder',
          summary: 'Price and check an order without placing it',
          description:
            'Writes nothing. Every business problem is 200 with isValid false, errors[] with ' +
            'RFC 6901 pointers and amounts null: STORE_CLOSED, OUTSIDE_AVAILABILITY_WINDOW, ' +
            'ITEM_UNAVAILABLE, MODIFIER_REQUIRED, DELIVERY_UNAVAILABLE, ADDRESS_INVALID, ' +
            'MINIMUM_NOT_MET, PRECISION_EXCEEDED, ORDER_TOTAL_DIFFERENT, CATALOGSET_NOT_FOUND and ' +
            'the fulfillment rules. 4xx only for the body shape (400 REQUEST_INVALID), the client ' +
            'context (400 CLIENT_CONTEXT_REQUIRED, CLIENT_IP_INVALID, CLIENT_USER_AGENT_INVALID) ' +
            'and an unknown store (404 STORE_NOT_FOUND).',
          body: orderRequest,
          response: { 200: validatedOrder, ...problemResponses(400, 404, 413, 415) },
        },
      },
      forwardBody(bus, subjects.ordering.validate, contextOf),
    ),
  );
}
