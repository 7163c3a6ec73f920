import type { PartnerMode } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { findMarketfrontStore, type MarketfrontRow } from './store.repository.js';
import type { StoresDatabase } from './store.table.js';

/** What an entry costs beyond its JSON: the object, its strings' headers, the LRU's node. */
const ENTRY_OVERHEAD_BYTES = 1_024;

/**
 * Marketfront rows (`stores.v1.lookup`) by store id, bounded by bytes and by a TTL. The
 * service's own writes drop a row once committed (`invalidate`); another replica's drop it
 * when their store event arrives, and any other write of theirs (or a missed event) is seen
 * within the TTL. Replies are still computed per request (open now, a pause whose resumeAt
 * has passed).
 */
export interface StoreRowCache {
  /** The store as requests of `mode` see it (any mode when undefined), else undefined. */
  lookup(storeId: string, mode: PartnerMode | undefined): Promise<MarketfrontRow | undefined>;
  /** Forget the store's row: after a write to it has committed, or its event arrived. */
  invalidate(storeId: string): void;
}

export function createStoreRowCache(
  db: Kysely<StoresDatabase>,
  options: { maxBytes: number; ttlMs: number },
): StoreRowCache {
  const rows = new LRUCache<string, MarketfrontRow>({
    maxSize: options.maxBytes,
    ttl: options.ttlMs,
    sizeCalculation: (row) => Buffer.byteLength(JSON.stringify(row)) + ENTRY_OVERHEAD_BYTES,
  });
  // One more with every invalidation: a read that began before one may hold the row as it
  // was before the write, so it answers but is not kept.
  let generation = 0;
  return {
    async lookup(storeId, mode) {
      let row = rows.get(storeId);
      if (row === undefined) {
        const started = generation;
        row = await findMarketfrontStore(db, storeId);
        if (row !== undefined && generation === started) rows.set(storeId, row);
      }
      // The row's own mode decides, cached or not: a store of the other mode is absent.
      return row !== undefined && (mode === undefined || row.mode === mode) ? row : undefined;
    },
    invalidate(storeId) {
      generation += 1;
      rows.delete(storeId);
    },
  };
}
