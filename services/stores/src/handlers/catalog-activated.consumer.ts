import { events, MAX_ITEM_AVAILABILITY_CHANGES, subjects } from '@pcp/contracts';
import {
  tryParseJson,
  type BusClient,
  type HandlerOutcome,
  type OutboxRelay,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { randomUUID } from 'node:crypto';
import {
  deleteOverrides,
  nextItemAvailabilityVersion,
  overriddenItemIds,
} from '../db/item-availability.repository.js';
import { recordActiveCatalog } from '../db/store.repository.js';
import type { StoreRowCache } from '../db/store-row-cache.js';
import type { StoresDatabase } from '../db/store.table.js';
import { recordStoreEvent } from '../events/store-events.js';

export interface CatalogActivatedDeps {
  readonly db: Kysely<StoresDatabase>;
  readonly bus: BusClient;
  readonly prefix: string;
  readonly relay: OutboxRelay;
  readonly storeRows: StoreRowCache;
}

/**
 * catalog.v1.activated → the store's `catalogSetId`, its `catalog.activated` store event, and
 * its overrides of items the new catalog lacks dropped (docs/guide/stores.md#item-availability),
 * all in one transaction. Idempotent and order-proof: an event applies only over an older
 * version of the store's catalog, so replays and late redeliveries change nothing.
 */
export function catalogActivatedHandler({
  db,
  bus,
  prefix,
  relay,
  storeRows,
}: CatalogActivatedDeps) {
  return async (msg: JsMsg): Promise<HandlerOutcome> => {
    const event = events.catalogActivated.schema.safeParse(tryParseJson(msg.data));
    if (!event.success) return { deadLetter: 'not a catalog.v1.activated event' };
    const { storeId, catalogSetId, etag, activatedAt } = event.data.data;
    const ctx = { requestId: randomUUID() };
    const applied = await db.transaction().execute(async (trx) => {
      const recorded = await recordActiveCatalog(trx, {
        storeId,
        catalogSetId,
        activatedAt: new Date(activatedAt),
        version: event.data.version,
      });
      if (!recorded) return false;
      await recordStoreEvent(trx, prefix, storeId, {
        event: 'catalog.activated',
        storeId,
        catalogSetId,
        etag,
        activatedAt,
      });
      // A page of overrides at a time: each page is one question to the catalog and, when
      // it drops some, one items event (an event names at most 1,000 items).
      let after: string | null = null;
      for (;;) {
        const page = await overriddenItemIds(trx, storeId, after, MAX_ITEM_AVAILABILITY_CHANGES);
        if (page.length === 0) break;
        const known = await bus.request(
          subjects.catalog.knownItems,
          { storeId, itemIds: page },
          ctx,
        );
        const dropped = known.unknownItemIds;
        if (dropped.length > 0) {
          await deleteOverrides(trx, storeId, dropped);
          const next = await nextItemAvailabilityVersion(trx, storeId);
          if (next) {
            await recordStoreEvent(trx, prefix, storeId, {
              event: 'store.items_availability_changed',
              storeId,
              itemAvailabilityVersion: next.version,
              items: dropped.map((itemId) => ({ itemId, available: true, until: null })),
            });
          }
        }
        if (page.length < MAX_ITEM_AVAILABILITY_CHANGES) break;
        after = page[page.length - 1]!;
      }
      return true;
    });
    if (applied) {
      storeRows.invalidate(storeId);
      void relay.nudge();
    }
  };
}
