import { catalogSetNotification, catalogSetDryRun, guid, subjects } from '@pcp/contracts';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { jsonResponse, problemResponses } from '../openapi/responses.js';

export interface CatalogDryRunRoutesOptions {
  /**
   * How long a dry run may take: its reply waits for a download and a validation (longer than
   * the catalog service's download timeout).
   */
  readonly timeoutMs: number;
}

/** The dry run of a catalog ingest. */
export const catalogDryRunRoutes: FastifyPluginAsync<CatalogDryRunRoutesOptions> = async (
  gateway,
  options,
) => {
  const { bus } = gateway;
  gateway.withTypeProvider<ZodTypeProvider>().post(
    '/v1/commerce/stores/:storeId/catalogset-validation',
    {
      config: { area: 'commerce', rateClass: 'writes' },
      schema: {
        tags: ['Commerce: catalog'],
        operationId: 'validateCatalogSet',
        summary:
          'Dry-run a catalog ingest: download and validate a CatalogSet without activating it',
        description:
          'Does what an ingest does before activation, now, and answers with the result: downloads ' +
          'the CatalogSet from callbackUrl under the same rules (https only, public addresses, ' +
          'at most 3 redirects, timeouts, 50 MB), validates it with the same validator for this ' +
          'store (its storeId and currency) and counts the summary (items, sections, ' +
          'modifierGroups, and added, removed and priceChanged against the store’s active ' +
          'catalog). It does not create an ingest run, store the document, activate it or notify ' +
          'anyone: the served CatalogSet is unchanged; notify (catalogset-notification) to ingest. ' +
          '200 with valid false and the errors ingest would report (RFC 6901 paths) when the ' +
          'document is invalid, is not JSON or cannot be downloaded; summary only when valid. ' +
          'Referential errors do not quote a catalogIngestId (there is none). 404 ' +
          'STORE_NOT_FOUND for a store that is not the caller’s. Dry runs are bounded: one ' +
          'partner’s beyond its limit get 429 RATE_LIMITED, and a busy catalog service 503 ' +
          'SERVICE_UNAVAILABLE, both with Retry-After. The JSON Schema of the document is at ' +
          '/schemas/catalogset.json.',
        params: z.object({ storeId: guid }),
        body: catalogSetNotification,
        response: {
          200: jsonResponse(
            catalogSetDryRun,
            'What an ingest of the document would report now; nothing was stored or activated.',
          ),
          ...problemResponses('STORE_NOT_FOUND', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) =>
      bus.request(
        subjects.catalog.dryRun,
        { storeId: request.params.storeId, callbackUrl: request.body.callbackUrl },
        request.ctx,
        { timeoutMs: options.timeoutMs },
      ),
  );
};
