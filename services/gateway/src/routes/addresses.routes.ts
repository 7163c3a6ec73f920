import { addressInput, guid, savedAddress, savedAddressList, subjects } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

const tags = ['Marketfront: saved addresses'];
const addressRoute = { area: 'distribution' as const, endUser: 'required' as const };

export const addressRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/v1/marketfront/addresses',
    {
      config: { ...addressRoute, rateClass: 'writes' },
      schema: {
        tags: tags,
        operationId: 'saveAddress',
        summary: 'Save a delivery address for an end user',
        description:
          'Needs X-End-User-Id. Answers the resolved, geocoded address: 201, or 200 with the ' +
          'existing addressId when the end user saved the same address before (case and ' +
          'spacing aside). 422 ADDRESS_INVALID when it cannot be resolved; an end user holds at ' +
          'most 50 (409 ADDRESS_LIMIT_REACHED). Use it as fulfillment.address.addressId.',
        body: addressInput,
        response: {
          200: jsonResponse(savedAddress, 'The end user had saved this address: the existing one'),
          201: jsonResponse(savedAddress, 'The address, resolved and saved'),
          ...problemResponses('ADDRESS_INVALID', 'ADDRESS_LIMIT_REACHED'),
        },
      },
    },
    async (request, reply) => {
      const { address, created } = await bus.request(
        subjects.ordering.saveAddress,
        request.body,
        request.ctx,
      );
      return reply.code(created ? 201 : 200).send(address);
    },
  );

  app.get(
    '/v1/marketfront/addresses',
    {
      config: { ...addressRoute, rateClass: 'reads' },
      schema: {
        tags: tags,
        operationId: 'listAddresses',
        summary: 'List the end user’s saved addresses, newest first',
        description: 'Needs X-End-User-Id. At most 50 addresses, all on one page.',
        response: { 200: jsonResponse(savedAddressList, 'The end user’s saved addresses') },
      },
    },
    async (request, reply) =>
      forwardJson(reply, await bus.requestRaw(subjects.ordering.listAddresses, {}, request.ctx)),
  );

  app.delete(
    '/v1/marketfront/addresses/:addressId',
    {
      config: { ...addressRoute, rateClass: 'writes' },
      schema: {
        tags: tags,
        operationId: 'deleteAddress',
        summary: 'Delete one of the end user’s saved addresses',
        description:
          'Deleting it again is 204; an addressId that is not the end user’s is 422 ADDRESS_INVALID.',
        params: z.object({ addressId: guid }),
        response: {
          204: z.null().describe('Deleted (or already deleted)'),
          ...problemResponses('ADDRESS_INVALID'),
        },
      },
    },
    async (request, reply) => {
      await bus.request(subjects.ordering.deleteAddress, request.params, request.ctx);
      return reply.code(204).send(null);
    },
  );
};
