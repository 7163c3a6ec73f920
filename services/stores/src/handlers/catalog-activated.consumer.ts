import { events } from '@pcp/contracts';
import { tryParseJson, type HandlerOutcome } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { recordActiveCatalog } from '../db/store.repository.js';
import type { StoresDatabase } from '../db/store.table.js';

/**
 * catalog.v1.activated → the store's `catalogSetId`. Idempotent and order-proof: an event
 * applies only over an older version of the store's catalog, so replays and late
 * redeliveries change nothing.
 */
export function catalogActivatedHandler(db: Kysely<StoresDatabase>) {
  return async (msg: JsMsg): Promise<HandlerOutcome> => {
    const event = events.catalogActivated.schema.safeParse(tryParseJson(msg.data));
    if (!event.success) return { deadLetter: 'not a catalog.v1.activated event' };
    const { storeId, catalogSetId, activatedAt } = event.data.data;
    await recordActiveCatalog(db, {
      storeId,
      catalogSetId,
      activatedAt: new Date(activatedAt),
      version: event.data.version,
    });
  };
}
