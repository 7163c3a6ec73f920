import {
  catalogIngestAccepted,
  catalogIngestStatus,
  catalogSetDocument,
  catalogSetNotification,
  guid,
  subjects,
} from '@pcp/contracts';
import { readChunks } from '@pcp/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { emptyResponse, jsonResponse, problemResponses } from '../openapi/responses.js';

/** Partners poll an unfinished ingest no sooner than this. */
const STATUS_POLL_SECONDS = 2;

export const catalogRoutes: FastifyPluginAsync = async (gateway) => {
  const { bus } = gateway;
  const app = gateway.withTypeProvider<ZodTypeProvider>();

  app.post(
    '/v1/commerce/catalogset-notification',
    {
      config: { area: 'commerce', rateClass: 'writes' },
      schema: {
        tags: ['Commerce: catalog'],
        operationId: 'notifyCatalogSetChanged',
        summary: 'Notify that a store’s CatalogSet changed',
        description:
          'The service downloads the CatalogSet from callbackUrl asynchronously (https, public ' +
          'addresses, at most 3 redirects, 50 MB) and validates it. Poll the status URL ' +
          '(statusUrl, also the Location header) honouring Retry-After until it is succeeded or ' +
          'failed: only succeeded means the store serves the new catalog. Check the document ' +
          'first against the CatalogSet JSON Schema (GET /schemas/catalogset.json) or with a dry ' +
          'run (catalogset-validation). 404 STORE_NOT_FOUND for a store that is not yours; 429 ' +
          'CATALOG_INGEST_QUEUE_FULL (with Retry-After) while your partner has the most ' +
          'ingests waiting to start.',
        querystring: z.object({ storeId: guid }),
        body: catalogSetNotification,
        response: {
          202: jsonResponse(
            catalogIngestAccepted,
            'The ingest is queued: poll its status URL after Retry-After seconds',
            ['Location', 'Retry-After'],
          ),
          ...problemResponses('STORE_NOT_FOUND', 'CATALOG_INGEST_QUEUE_FULL'),
        },
      },
    },
    async (request, reply) => {
      const { storeId } = request.query;
      const accepted = await bus.request(
        subjects.catalog.notify,
        { storeId, callbackUrl: request.body.callbackUrl },
        request.ctx,
      );
      const statusUrl = `/v1/commerce/stores/${storeId}/catalog-ingest/${accepted.catalogIngestId}/status`;
      return reply
        .code(202)
        .header('location', statusUrl)
        .header('retry-after', String(accepted.retryAfterSeconds))
        .send({ catalogIngestId: accepted.catalogIngestId, statusUrl });
    },
  );

  app.get(
    '/v1/commerce/stores/:storeId/catalog-ingest/:catalogIngestId/status',
    {
      config: { area: 'commerce', rateClass: 'reads' },
      schema: {
        tags: ['Commerce: catalog'],
        operationId: 'getCatalogIngestStatus',
        summary: 'Catalog ingest status',
        description:
          'Poll until succeeded (with a summary counted against the previously active catalog) ' +
          'or failed (with errors[]: partner-safe reasons, each with an RFC 6901 path into the ' +
          'document); while unfinished the response carries Retry-After. 404 ' +
          'CATALOG_INGEST_NOT_FOUND for an id that is not of this store.',
        params: z.object({ storeId: guid, catalogIngestId: guid }),
        response: {
          200: jsonResponse(
            catalogIngestStatus,
            'The ingest now; Retry-After while it is queued, pulling or processing',
            ['Retry-After'],
          ),
          ...problemResponses('CATALOG_INGEST_NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const status = await bus.request(subjects.catalog.status, request.params, request.ctx);
      if (status.status !== 'succeeded' && status.status !== 'failed') {
        reply.header('retry-after', String(STATUS_POLL_SECONDS));
      }
      return reply.send(status);
    },
  );

  // Registered without the type provider: the body is the stored JSON bytes, streamed as
  // they are, chunk by chunk.
  gateway.get<{ Params: { storeId: string }; Headers: { 'if-none-match'?: string } }>(
    '/v1/marketfront/stores/:storeId/catalogset',
    {
      config: { area: 'distribution', rateClass: 'reads' },
      schema: {
        tags: ['Marketfront: catalog'],
        operationId: 'getCatalogSet',
        summary: 'The store’s active CatalogSet',
        description:
          'The document the store’s commerce partner published (its JSON Schema: GET ' +
          '/schemas/catalogset.json). Carries an ETag; send it back in If-None-Match to get 304 ' +
          'when unchanged. 404 CATALOGSET_NOT_FOUND before the first successful ingest (and for ' +
          'an unknown store).',
        params: z.object({ storeId: guid }),
        headers: z.object({ 'if-none-match': z.string().max(512).optional() }),
        response: {
          200: jsonResponse(catalogSetDocument, 'The active CatalogSet', ['ETag']),
          304: emptyResponse('Not Modified: your copy (If-None-Match) is the active one', ['ETag']),
          ...problemResponses('CATALOGSET_NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const ifNoneMatch = request.headers['if-none-match'];
      const ctx = request.ctx;
      const described = await bus.request(
        subjects.catalog.document,
        { storeId: request.params.storeId, ...(ifNoneMatch ? { ifNoneMatch } : {}) },
        ctx,
      );
      reply.header('etag', described.etag).header('cache-control', 'private, no-cache');
      if (described.notModified) return reply.code(304).send();
      const chunks = readChunks(described.chunks, (index) =>
        bus.requestRaw(
          subjects.catalog.documentChunk,
          { versionId: described.versionId, index },
          ctx,
        ),
      );
      // The first chunk before the headers: a failure still gets a ProblemDetail. Later, a
      // failure can only cut the body short, which Content-Length lets the client detect.
      const first = await chunks.next();
      return reply
        .type('application/json; charset=utf-8')
        .header('content-length', String(described.totalBytes))
        .send(
          // One chunk buffered at a time (highWaterMark 1 byte): a slow reader holds back
          // the next fetch instead of letting the document pile up in the gateway.
          Readable.from(prepend(first.value, chunks), { objectMode: false, highWaterMark: 1 }),
        );
    },
  );
};

async function* prepend(
  first: Buffer | void,
  rest: AsyncIterable<Buffer>,
): AsyncGenerator<Buffer, void, undefined> {
  if (first) yield first;
  yield* rest;
}
