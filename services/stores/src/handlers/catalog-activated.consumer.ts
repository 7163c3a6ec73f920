import { events } from '@pcp/contracts';
import type { Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { recordActiveCatalog } from '../db/store.repository.js';
import type { StoresDatabase } from '../db/store.table.js';

/** catalog.v1.activated → the store's `catalogSetId`. Idempotent: replays change nothing. */
export function catalogActivatedHandler(db: Kysely<StoresDatabase>, logger: Logger) {
  return async (msg: JsMsg): Promise<void> => {
    const event = events.catalogActivated.schema.safeParse(msg.json());
    if (!event.success) {
      // A message that can never be handled is dropped with a record, not retried forever.
      logger.error(
        { seq: msg.seq, issues: event.error.issues },
        'malformed catalog.v1.activated event',
      );
      msg.term();
      return;
    }
    const { storeId, catalogSetId, activatedAt } = event.data.data;
    await recordActiveCatalog(db, { storeId, catalogSetId, activatedAt: new Date(activatedAt) });
    msg.ack();
  };
}
