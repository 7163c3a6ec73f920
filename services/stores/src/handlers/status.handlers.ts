import { subjects } from '@pcp/contracts';
import {
  AppError,
  handle,
  requirePartner,
  type HandlerBinding,
  type OutboxRelay,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { findPartnerStore, lockStore, updateStoreStatus } from '../db/store.repository.js';
import type { StoreRowCache } from '../db/store-row-cache.js';
import type { StoresDatabase } from '../db/store.table.js';
import { statusChangedData } from '../domain/store-event-data.js';
import { effectiveStatus } from '../domain/store-profile.js';
import { platformPauseColumns, statusChangeColumns } from '../domain/store-status.js';
import { recordStoreEvent } from '../events/store-events.js';
import { storeNotFound } from './store.handlers.js';

export interface StatusDeps {
  readonly db: Kysely<StoresDatabase>;
  readonly clock: () => Date;
  readonly prefix: string;
  readonly relay: OutboxRelay;
  readonly storeRows: StoreRowCache;
}

export function statusHandlers({
  db,
  clock,
  prefix,
  relay,
  storeRows,
}: StatusDeps): HandlerBinding[] {
  return [
    handle(subjects.stores.getStatus, async ({ storeId }, ctx) => {
      const row = await findPartnerStore(db, requirePartner(ctx, 'commerce'), storeId);
      if (!row) throw storeNotFound();
      return effectiveStatus(row, clock());
    }),

    handle(subjects.stores.setStatus, async ({ storeId, change }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const now = clock();
      const decision = statusChangeColumns(change, now);
      if (!decision.ok) {
        throw new AppError('REQUEST_INVALID', decision.message, {
          errors: [{ code: 'INVALID_VALUE', message: decision.message, pointer: decision.pointer }],
        });
      }
      const row = await db.transaction().execute(async (trx) => {
        const updated = await updateStoreStatus(trx, partnerId, storeId, decision.columns);
        if (!updated) return undefined;
        await recordStoreEvent(trx, prefix, storeId, statusChangedData(updated, now));
        return updated;
      });
      storeRows.invalidate(storeId);
      if (!row) throw storeNotFound();
      void relay.nudge();
      return effectiveStatus(row, now);
    }),

    // Ordering only (nats-permissions.ts), retried until it succeeds: a store already paused
    // that way is left as it is, so a retry sends no second event.
    handle(subjects.stores.platformPause, async ({ storeId }) => {
      const now = clock();
      const row = await db.transaction().execute(async (trx) => {
        const current = await lockStore(trx, storeId);
        if (!current) return undefined;
        const columns = platformPauseColumns(current, now);
        if (!columns) return current;
        const updated = await updateStoreStatus(trx, current.partner_id, storeId, columns);
        if (!updated) return undefined;
        await recordStoreEvent(trx, prefix, storeId, statusChangedData(updated, now));
        return updated;
      });
      storeRows.invalidate(storeId);
      if (!row) throw storeNotFound();
      void relay.nudge();
      return effectiveStatus(row, now);
    }),
  ];
}
