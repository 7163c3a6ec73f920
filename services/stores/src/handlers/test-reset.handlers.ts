import { subjects } from '@pcp/contracts';
import { handle, requireTestPartner, type HandlerBinding } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { deletePartnerStores } from '../db/deleted-store-versions.repository.js';
import type { StoreRowCache } from '../db/store-row-cache.js';
import type { StoresDatabase } from '../db/store.table.js';
import { STORE_EVENT_AGGREGATE, STORE_PROFILE_AGGREGATE } from '../events/store-events.js';

/**
 * `stores.testReset` (docs/guide/sandbox.md#reset): the calling test tenant's stores, their
 * item availability overrides and their events in the outbox, in one transaction, keeping the
 * stores' last versions; then the deleted stores are announced, so the gateways end their live
 * streams.
 */
export function testResetHandler(
  db: Kysely<StoresDatabase>,
  storeRows: StoreRowCache,
  announceDeleted: (storeIds: readonly string[]) => void,
): HandlerBinding {
  return handle(subjects.stores.testReset, async (_input, ctx) => {
    const partnerId = requireTestPartner(ctx);
    const deleted = await db.transaction().execute(async (trx) => {
      const storeIds = trx
        .selectFrom('stores')
        .select('store_id')
        .where('partner_id', '=', partnerId);
      const overrides = await trx
        .deleteFrom('item_availability_overrides')
        .where('store_id', 'in', storeIds)
        .executeTakeFirst();
      const outbox = await trx
        .deleteFrom('outbox')
        .where('aggregate_type', 'in', [STORE_EVENT_AGGREGATE, STORE_PROFILE_AGGREGATE])
        .where(
          'aggregate_id',
          'in',
          trx
            .selectFrom('stores')
            .select(sql<string>`store_id::text`.as('id'))
            .where('partner_id', '=', partnerId),
        )
        .executeTakeFirst();
      // Their ids keep their last versions: a store created again with one continues them.
      const deletedIds = await deletePartnerStores(trx, partnerId);
      return {
        storeIds: deletedIds,
        'stores.stores': deletedIds.length,
        'stores.item_availability_overrides': Number(overrides.numDeletedRows),
        'stores.outbox': Number(outbox.numDeletedRows),
      };
    });
    const { storeIds, ...counts } = deleted;
    for (const storeId of storeIds) storeRows.invalidate(storeId);
    announceDeleted(storeIds);
    return { deleted: counts };
  });
}
