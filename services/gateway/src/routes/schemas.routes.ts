import type { FastifyPluginAsync } from 'fastify';
import { createHash } from 'node:crypto';
import { CATALOGSET_SCHEMA_PATH, catalogSetJsonSchema } from '../openapi/catalogset-schema.js';

/** Clients keep the schema this long before revalidating it with its ETag. */
const SCHEMA_MAX_AGE_SECONDS = 3_600;

export interface SchemaRoutesOptions {
  /** Where partners reach the API: the schema's `$id`. */
  readonly publicBaseUrl: string;
}

/**
 * Public schemas: no API key, cacheable, revalidated by ETag. The document is rendered once,
 * when the routes are registered, not per request.
 */
export const schemaRoutes: FastifyPluginAsync<SchemaRoutesOptions> = async (app, options) => {
  const body = JSON.stringify(catalogSetJsonSchema(options.publicBaseUrl));
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;

  app.get(CATALOGSET_SCHEMA_PATH, { schema: { hide: true } }, (request, reply) => {
    reply.header('etag', etag).header('cache-control', `public, max-age=${SCHEMA_MAX_AGE_SECONDS}`);
    if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply.type('application/schema+json').send(body);
  });
};

/** RFC 9110 If-None-Match: `*` or a list of (possibly weak) tags, compared weakly. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header
    .split(',')
    .some((tag) => tag.trim() === '*' || tag.trim().replace(/^W\//, '') === etag);
}
