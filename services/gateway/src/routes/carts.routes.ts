import {
  addCartItemInput,
  pricedCart,
  removeCartItemInput,
  subjects,
  updateCartItemInput,
} from '@pcp/contracts';
import type { BusClient, RequestContext } from '@pcp/service-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { forwardBody, problemResponses, registerForwardingRoutes } from './route-config.js';

const config = { area: 'distribution' as const, rateClass: 'reads' as const };
const tags = ['Marketfront: carts'];
const responses = { 200: pricedCart, ...problemResponses(400, 404) };
const errorsNote =
  'Nothing is stored: send the whole cart each time. Computed fields (currency, subTotal, ' +
  'itemCount; name, unitPrice, totalPrice) are ignored on input. Problems are 400 CART_INVALID ' +
  'with errors[] pointing into this request (404 CATALOGSET_NOT_FOUND when the catalogSetId ' +
  "is not the store's current one).";

export function registerCartRoutes(
  gateway: FastifyInstance,
  bus: BusClient,
  contextOf: (request: FastifyRequest) => RequestContext,
): void {
  registerForwardingRoutes(gateway, (scope) => {
    const app = scope.withTypeProvider<ZodTypeProvider>();
    app.post(
      '/v1/marketfront/carts/add',
      {
        config,
        schema: {
          tags,
          summary: 'Add an item to a cart (a null cart starts one)',
          description: `${errorsNote} A new cart needs catalogSetId and storeId.`,
          body: addCartItemInput,
          response: responses,
        },
      },
      forwardBody(bus, subjects.ordering.cartAdd, contextOf),
    );
    app.post(
      '/v1/marketfront/carts/remove',
      {
        config,
        schema: {
          tags,
          summary: 'Remove a line from a cart',
          description: errorsNote,
          body: removeCartItemInput,
          response: responses,
        },
      },
      forwardBody(bus, subjects.ordering.cartRemove, contextOf),
    );
    app.post(
      '/v1/marketfront/carts/update',
      {
        config,
        schema: {
          tags,
          summary: 'Set a line’s quantity (0 removes it)',
          description: errorsNote,
          body: updateCartItemInput,
          response: responses,
        },
      },
      forwardBody(bus, subjects.ordering.cartUpdate, contextOf),
    );
  });
}
