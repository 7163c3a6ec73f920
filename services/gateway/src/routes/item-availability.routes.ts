import { guid, itemAvailabilityList, setItemAvailabilityInput, subjects } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemOrNoBody, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

const storeParams = z.object({ storeId: guid });
const tags = { commerce: ['Commerce: stores'], marketfront: ['Marketfront: stores'] };

/** Item availability overrides (docs/guide/stores.md#item-availability). */
export const itemAvailabilityRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.put(
    '/v1/commerce/stores/:storeId/item-availability',
    {
      config: { area: 'commerce', rateClass: 'writes' },
      schema: {
        tags: tags.commerce,
        operationId: 'setItemAvailability',
        summary: 'Set or clear item availability overrides',
        description:
          'Each entry (1..1,000, each item once) makes an item of the store’s active catalog ' +
          'unavailable (available: false) until `until` (in the future, at most 366 days ahead; ' +
          'null or absent: until cleared), or clears its override (available: true). Cart ' +
          'helpers, validate and place refuse an overridden item with ITEM_UNAVAILABLE at once; ' +
          'the CatalogSet document and its ETag do not change. An item not in the active ' +
          'catalog is 400 REQUEST_INVALID with its pointer; a store without a catalog is 404 ' +
          'CATALOGSET_NOT_FOUND. Answers the store’s current overrides and their new version.',
        params: storeParams,
        body: setItemAvailabilityInput,
        response: {
          200: jsonResponse(itemAvailabilityList, 'The store’s current overrides'),
          ...problemResponses('STORE_NOT_FOUND', 'CATALOGSET_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(
          subjects.stores.setItemAvailability,
          { storeId: request.params.storeId, items: request.body.items },
          request.ctx,
        ),
      ),
  );

  app.get(
    '/v1/commerce/stores/:storeId/item-availability',
    {
      config: { area: 'commerce', rateClass: 'reads' },
      schema: {
        tags: tags.commerce,
        operationId: 'getItemAvailability',
        summary: 'Read a store’s item availability overrides',
        description:
          'The overrides in force now (an override past its `until` is gone) and their version, ' +
          'one more with every change. Another partner’s store answers 404 STORE_NOT_FOUND.',
        params: storeParams,
        response: {
          200: jsonResponse(itemAvailabilityList, 'The store’s current overrides'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(subjects.stores.getItemAvailability, request.params, request.ctx),
      ),
  );

  // Registered without the type provider: its bodiless 404 is outside the response schemas.
  gateway.get<{ Params: { storeId: string } }>(
    '/v1/marketfront/stores/:storeId/item-availability',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags: tags.marketfront,
        operationId: 'lookUpItemAvailability',
        summary: 'Read any store’s item availability overrides',
        description:
          'The items of the store’s catalog that carts and orders refuse now, until when, and ' +
          'the overrides’ version (store.items_availability_changed webhooks carry it). An ' +
          'unknown store is 404 STORE_NOT_FOUND; an id that is not a GUID is a 404 with no body.',
        // Checked in the handler, as the store lookup: a bodiless 404 for a malformed id.
        params: z.object({ storeId: z.string() }),
        response: {
          200: jsonResponse(itemAvailabilityList, 'The store’s current overrides'),
          ...problemOrNoBody('STORE_NOT_FOUND', 'for a storeId that is not a GUID'),
        },
      },
    },
    async (request, reply) => {
      const storeId = guid.safeParse(request.params.storeId);
      if (!storeId.success) return reply.code(404).send();
      return forwardJson(
        reply,
        await bus.requestRaw(
          subjects.stores.lookupItemAvailability,
          { storeId: storeId.data },
          request.ctx,
        ),
      );
    },
  );
};
