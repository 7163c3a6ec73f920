import { subjects } from '@pcp/contracts';
import { AppError, handle, type HandlerBinding } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { CatalogDatabase } from '../db/catalog.table.js';

/**
 * Stores only (nats-permissions.ts): which item ids the store's active catalog lacks and how
 * many items it has, for item availability overrides (docs/guide/stores.md#item-availability).
 * Postgres reads the version's item ids, so the service never parses a large catalog's prices.
 */
export function knownItemsHandlers(db: Kysely<CatalogDatabase>): HandlerBinding[] {
  return [
    handle(subjects.catalog.knownItems, async ({ storeId, itemIds }) => {
      // The prices are read (and detoasted) once and their keys joined by hash: a `?` per id
      // would detoast a large catalog's prices for every id asked.
      const { rows } = await sql<{
        catalog_set_id: string;
        version_id: string;
        item_count: number;
        unknown_item_ids: string[];
      }>`
        with active as materialized (
          select v.catalog_set_id, v.version_id, v.prices
          from active_catalogs a join catalog_versions v using (version_id)
          where a.store_id = ${storeId}
        ), keys as materialized (
          select jsonb_object_keys(prices) as key from active
        )
        select catalog_set_id, version_id,
          (select count(*) from keys)::int as item_count,
          array(
            select asked.id
            from unnest(${itemIds}::text[]) with ordinality as asked (id, position)
            left join keys on keys.key = asked.id
            where keys.key is null
            order by asked.position
          ) as unknown_item_ids
        from active`.execute(db);
      const row = rows[0];
      if (!row) {
        throw new AppError('CATALOGSET_NOT_FOUND', 'This store has no active CatalogSet yet');
      }
      return {
        catalogSetId: row.catalog_set_id,
        versionId: row.version_id,
        itemCount: row.item_count,
        unknownItemIds: row.unknown_item_ids,
      };
    }),
  ];
}
