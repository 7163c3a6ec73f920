import { catalogLimits, catalogSetDocument, currencyCode } from '@pcp/contracts';
import { z } from 'zod';

/** Where the CatalogSet's JSON Schema is served, below the public base URL. */
export const CATALOGSET_SCHEMA_PATH = '/schemas/catalogset.json';

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
