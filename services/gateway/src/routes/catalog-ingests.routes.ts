import { catalogIngestList, guid, listPageQuery, subjects } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';
import { forwardJson } from './forwarding.js';

/** A store's catalog ingest runs, newest first: docs/guide/catalogs.md#listing-ingests. */
export const catalogIngestListRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  gateway.withTypeProvider<ZodTypeProvider>().get(
    '/v1/commerce/stores/:storeId/catalog-ingests',
    {
      config: { area: 'commerce', rateClass: 'reads' },
      schema: {
        tags: ['Commerce: catalog'],
        operationId: 'listCatalogIngests',
        summary: 'List a store’s catalog ingest runs, newest first',
        description:
          'Every ingest run of one of your stores that is still kept, newest first: its ' +
          'state (as its status resource shows it), when it was notified, first taken up and ' +
          'finished, the change summary of a succeeded run and the number of errors of a ' +
          'failed one (read them, with their paths, on its status resource). limit is 1..100 ' +
          '(default 20). nextCursor is absent on the last page; otherwise send it back as ' +
          'before for the next page (it is opaque; one that was not issued is 400 ' +
          'REQUEST_INVALID at /before, and so is an unknown query parameter). A store that is ' +
          'not yours answers 404 STORE_NOT_FOUND.',
        params: z.object({ storeId: guid }),
        querystring: listPageQuery,
        response: {
          200: jsonResponse(catalogIngestList, 'A page of the store’s ingest runs, newest first'),
          ...problemResponses('STORE_NOT_FOUND'),
        },
      },
    },
    async (request, reply) =>
      forwardJson(
        reply,
        await bus.requestRaw(
          subjects.catalog.listIngests,
          { ...request.query, storeId: request.params.storeId },
          request.ctx,
        ),
      ),
  );
};
