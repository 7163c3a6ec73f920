import type { Migration } from 'kysely';
import * as createCatalog from './2026-11-22T0100-create-catalog.js';
import * as runActivationEvent from './2026-11-22T0200-run-activation-event.js';
import * as documentChunks from './2026-11-23T0100-document-chunks.js';
import * as ingestRunFairness from './2026-11-24T0100-ingest-run-fairness.js';
import * as orderedOutbox from './2026-11-25T0100-ordered-outbox.js';
import * as fairIngestClaims from './2026-11-26T0100-fair-ingest-claims.js';
import * as modesDataCatalogMode from './2026-12-20T0120-modes-data-catalog-mode.js';
import * as ingestRunList from './2026-12-22T0100-ingest-run-list.js';

/** Migrations of the `catalog` schema. */
export const catalogMigrations: Record<string, Migration> = {
  '2026-11-22T0100-create-catalog': createCatalog,
  '2026-11-22T0200-run-activation-event': runActivationEvent,
  '2026-11-23T0100-document-chunks': documentChunks,
  '2026-11-24T0100-ingest-run-fairness': ingestRunFairness,
  '2026-11-25T0100-ordered-outbox': orderedOutbox,
  '2026-11-26T0100-fair-ingest-claims': fairIngestClaims,
  '2026-12-20T0120-modes-data-catalog-mode': modesDataCatalogMode,
  '2026-12-22T0100-ingest-run-list': ingestRunList,
};

export const CATALOG_SCHEMA = 'catalog';
