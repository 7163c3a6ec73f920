import { subjects } from '@pcp/contracts';
import { handle, requirePartner, type HandlerBinding } from '@pcp/service-kit';
import { hoursChangedData } from '../domain/store-event-data.js';
import { recordStoreEvent } from '../events/store-events.js';
import type { Kysely } from 'kysely';
import { findPartnerStore, replaceSpecialDays } from '../db/store.repository.js';
import type { StoreRowCache } from '../db/store-row-cache.js';
import type { StoresDatabase } from '../db/store.table.js';
import { storeNotFound, type StoreEventOutbox } from './store.handlers.js';

/**
 * A store's special hours (docs/guide/stores.md#special-hours): dates in its time zone whose
 * hours replace the weekly ones. The contract's schema bounds the days and refuses duplicate
 * dates and overlapping windows before a handler runs.
 */
export function specialHoursHandlers(
  db: Kysely<StoresDatabase>,
  clock: () => Date,
  outbox: StoreEventOutbox,
  storeRows: StoreRowCache,
): HandlerBinding[] {
  return [
    handle(subjects.stores.getSpecialHours, async ({ storeId }, ctx) => {
      const row = await findPartnerStore(db, requirePartner(ctx, 'commerce'), storeId);
      if (!row) throw storeNotFound();
      return { days: row.special_days };
    }),

    handle(subjects.stores.setSpecialHours, async ({ storeId, days }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const row = await db.transaction().execute(async (trx) => {
        const replaced = await replaceSpecialDays(trx, partnerId, storeId, days);
        if (!replaced) return undefined;
        await recordStoreEvent(trx, outbox.prefix, storeId, hoursChangedData(replaced, clock()));
        return replaced;
      });
      storeRows.invalidate(storeId);
      if (!row) throw storeNotFound();
      void outbox.relay.nudge();
      return { days: row.special_days };
    }),
  ];
}
