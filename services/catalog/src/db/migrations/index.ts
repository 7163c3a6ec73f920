import type { Migration } from 'kysely';
import * as createCatalog from './2026-11-22T0100-create-catalog.js';

/** Migrations of the `catalog` schema. */
export const catalogMigrations: Record<string, Migration> = {
  '2026-11-22T0100-create-catalog': createCatalog,
};

export const CATALOG_SCHEMA = 'catalog';
