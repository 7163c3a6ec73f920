import { subjects } from '@pcp/contracts';
import { AppError, handle, requirePartner, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { findPartnerStore, updateStoreStatus } from '../db/store.repository.js';
import type { StoresDatabase } from '../db/store.table.js';
import { effectiveStatus } from '../domain/store-profile.js';
import { statusChangeColumns } from '../domain/store-status.js';
import { storeNotFound } from './store.handlers.js';

export function statusHandlers(db: Kysely<StoresDatabase>, clock: () => Date): HandlerBinding[] {
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
      const row = await updateStoreStatus(db, partnerId, storeId, decision.columns);
      if (!row) throw storeNotFound();
      return effectiveStatus(row, now);
    }),
  ];
}
