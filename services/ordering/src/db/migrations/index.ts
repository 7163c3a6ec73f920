import type { Migration } from 'kysely';
import * as createAddresses from './2026-11-26T0200-create-addresses.js';

/** Migrations of the `ordering` schema. */
export const orderingMigrations: Record<string, Migration> = {
  '2026-11-26T0200-create-addresses': createAddresses,
};

export const ORDERING_SCHEMA = 'ordering';
