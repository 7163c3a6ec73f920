import { catalogLimits, catalogSetDocument, currencyCode } from '@pcp/contracts';
import type { FastifyInstance } from 'fastify';
import { createHash } from 'node:crypto';
import { z } from 'zod';

/** Where the CatalogSet's JSON Schema is served, below the public base URL. */
export const CATALOGSET_SCHEMA_PATH = '/schemas/catalogset.json';

/** Clients keep the schema this long before revalidating it with its ETag. */
const SCHEMA_MAX_AGE_SECONDS = 3_600;

/**
 * The CatalogSet's JSON Schema (draft 2020-12), generated from the contract's zod schema, so
 * it cannot drift from what ingest accepts. It describes the document as partners write it
 * (zod's input side); the rules a schema cannot state are named in its description.
 */
export function catalogSetJsonSchema(publicBaseUrl: string): Record<string, unknown> {
  const { $schema, ...generated } = z.toJSONSchema(catalogSetDocument, {
    target: 'draft-2020-12',
    io: 'input',
    override: ({ zodSchema, jsonSchema }) => {
      // A refinement against the ISO 4217 table; the schema can state the code's form.
      if (zodSchema === currencyCode) {
        jsonSchema.pattern = '^[A-Z]{3}$';
        jsonSchema.description = 'ISO 4217 code; it must be the store’s currency';
      }
    },
  });
  return {
    $schema,
    $id: `${publicBaseUrl.replace(/\/$/, '')}${CATALOGSET_SCHEMA_PATH}`,
    title: 'CatalogSet',
    description:
      'The CatalogSet document a commerce partner hosts for catalog ingest. This schema checks ' +
      'its shape and field formats only. It cannot express these rules, which ingest also ' +
      'enforces: every dictionary key equals its entity’s own id (catalogId, sectionId, itemId, ' +
      'modifierGroupId), ids compare case-insensitively; every referenced id resolves in its ' +
      'dictionary and is listed once; sections and modifiers do not nest in a cycle; modifiers ' +
      `nest at most ${catalogLimits.maxModifierDepth} levels; minimumAllowed ≤ maximumAllowed; ` +
      'basePrice has at most the currency’s minor-unit digits; storeId and currency equal the ' +
      `store’s; at most ${catalogLimits.maxItems} items and ${catalogLimits.maxDocumentBytes / 1024 / 1024} MB. ` +
      '`npx pcp-catalog dry-run FILE|URL` and POST /v1/commerce/stores/{storeId}/catalogset-validation ' +
      '(a dry run of ingest) check all of them.',
    ...generated,
  };
}

/**
 * Public schemas: no API key, cacheable, revalidated by ETag. The document is rendered once,
 * when the routes are registered, not per request.
 */
export function registerSchemaRoutes(app: FastifyInstance, publicBaseUrl: string): void {
  const body = JSON.stringify(catalogSetJsonSchema(publicBaseUrl));
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;

  app.get(CATALOGSET_SCHEMA_PATH, { schema: { hide: true } }, (request, reply) => {
    reply.header('etag', etag).header('cache-control', `public, max-age=${SCHEMA_MAX_AGE_SECONDS}`);
    if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply.type('application/schema+json').send(body);
  });
}

/** RFC 9110 If-None-Match: `*` or a list of (possibly weak) tags, compared weakly. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header
    .split(',')
    .some((tag) => tag.trim() === '*' || tag.trim().replace(/^W\//, '') === etag);
}
