import { sql, type Kysely } from 'kysely';
import type { StoreRow, StoresDatabase } from './store.table.js';

type Db = Kysely<StoresDatabase>;

/**
 * Delete the partner's stores, keeping each id's last versions in `deleted_store_versions`
 * (replacing what an earlier deletion of the id kept), in one statement: the versions kept
 * are those of the rows deleted, so a store event that committed first is counted. Resolves
 * the deleted stores' ids.
 */
export async function deletePartnerStores(db: Db, partnerId: string): Promise<string[]> {
  const rows = await db
    .with('deleted', (qb) =>
      qb
        .deleteFrom('stores')
        .where('partner_id', '=', partnerId)
        .returning(['store_id', 'event_version', 'profile_version', 'item_availability_version']),
    )
    .insertInto('deleted_store_versions')
    .columns(['store_id', 'event_version', 'profile_version', 'item_availability_version'])
    .expression((eb) =>
      eb
        .selectFrom('deleted')
        .select(['store_id', 'event_version', 'profile_version', 'item_availability_version']),
    )
    .onConflict((oc) =>
      oc.column('store_id').doUpdateSet((eb) => ({
        event_version: eb.ref('excluded.event_version'),
        profile_version: eb.ref('excluded.profile_version'),
        item_availability_version: eb.ref('excluded.item_availability_version'),
        deleted_at: sql<Date>`now()`,
      })),
    )
    .returning('store_id')
    .execute();
  return rows.map((row) => row.store_id);
}

/**
 * A store just inserted with an id that was deleted before continues the deleted store's
 * versions: its next event is one past the last one's, whoever creates it in whichever mode.
 * Its item availability counts one more, as the deletion emptied the overrides (ordering's
 * caches hold the old store's under the old version). Call it in the inserting transaction,
 * after the insert: an insert that waited for a deletion of the id in flight then sees what
 * that deletion kept. Undefined when the id was never deleted.
 */
export function continueDeletedVersions(db: Db, storeId: string): Promise<StoreRow | undefined> {
  return db
    .updateTable('stores')
    .from('deleted_store_versions')
    .set((eb) => ({
      event_version: eb.ref('deleted_store_versions.event_version'),
      profile_version: eb.ref('deleted_store_versions.profile_version'),
      item_availability_version: sql<number>`deleted_store_versions.item_availability_version + 1`,
    }))
    .whereRef('stores.store_id', '=', 'deleted_store_versions.store_id')
    .where('stores.store_id', '=', storeId)
    .returningAll('stores')
    .executeTakeFirst();
}
