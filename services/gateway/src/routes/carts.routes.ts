import {
  addCartItemInput,
  pricedCart,
  removeCartItemInput,
  subjects,
  updateCartItemInput,
} from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardBody, registerForwardingRoutes } from './forwarding.js';

const config = { area: 'distribution' as const, rateClass: 'reads' as const };
const tags = ['Marketfront: carts'];
const responses = {
  200: jsonResponse(
    pricedCart,
    'The whole cart, priced from the store’s current CatalogSet; lines that can no longer be ' +
      'priced are listed in its errors[]',
  ),
  ...problemResponses('CART_INVALID', 'STORE_NOT_FOUND'),
};
const errorsNote =
  'Nothing is stored: send the whole cart each time. Computed fields (currency, subTotal, ' +
  'itemCount, errors; name, unitPrice, totalPrice) are ignored on input. A call fails only for ' +
  'what its operation touches (the added item, the updated line, an unknown lineItemId): 400 ' +
  'CART_INVALID with errors[] pointing into this request, CATALOGSET_REQUIRED and ' +
  "CATALOGSET_NOT_FOUND (not the store's current CatalogSet) among them. Lines already in the " +
  'cart that can no longer be priced are listed in the returned errors[] (pointers into the ' +
  'returned cart), priced null and left out of subTotal and itemCount, so they can always be ' +
  'removed. Availability windows are checked by validate and place, not here. 404 ' +
  'STORE_NOT_FOUND for an unknown store.';

export const cartRoutes: FastifyPluginAsync = async (gateway) => {
  registerForwardingRoutes(gateway, (scope) => {
    const app = scope.withTypeProvider<ZodTypeProvider>();
    app.post(
      '/v1/marketfront/carts/add',
      {
        config,
        schema: {
          tags,
          operationId: 'addCartItem',
          summary: 'Add an item to a cart (a null cart starts one)',
          description: `${errorsNote} A new cart needs catalogSetId and storeId.`,
          body: addCartItemInput,
          response: responses,
        },
      },
      forwardBody(subjects.ordering.cartAdd),
    );
    app.post(
      '/v1/marketfront/carts/remove',
      {
        config,
        schema: {
          tags,
          operationId: 'removeCartItem',
          summary: 'Remove a line from a cart',
          description: errorsNote,
          body: removeCartItemInput,
          response: responses,
        },
      },
      forwardBody(subjects.ordering.cartRemove),
    );
    app.post(
      '/v1/marketfront/carts/update',
      {
        config,
        schema: {
          tags,
          operationId: 'updateCartItem',
          summary: 'Set a line’s quantity (0 removes it)',
          description: errorsNote,
          body: updateCartItemInput,
          response: responses,
        },
      },
      forwardBody(subjects.ordering.cartUpdate),
    );
  });
};
