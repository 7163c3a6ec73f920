import { sql, type Kysely } from 'kysely';
import type { StoresDatabase } from './store.table.js';

type Db = Kysely<StoresDatabase>;

/** Current overrides of the store (`until` not yet passed), in item id order. */
export function listCurrentOverrides(db: Db, storeId: string, now: Date) {
  return db
    .selectFrom('item_availability_overrides')
    .select(['item_id', 'until'])
    .where('store_id', '=', storeId)
    .where((eb) => eb.or([eb('until', 'is', null), eb('until', '>', now)]))
    .orderBy('item_id')
    .execute();
}

/**
 * Take the next overrides version of the store, locking its row: the changes of one store
 * apply one at a time, in the order of their versions. Undefined when there is no such store.
 */
export async function nextItemAvailabilityVersion(
  trx: Db,
  storeId: string,
): Promise<{ version: number; timezone: string } | undefined> {
  const row = await trx
    .updateTable('stores')
    .set({ item_availability_version: sql<number>`item_availability_version + 1` })
    .where('store_id', '=', storeId)
    .returning(['item_availability_version', 'timezone'])
    .executeTakeFirst();
  return row && { version: row.item_availability_version, timezone: row.timezone };
}

/** The store's version without changing it. */
export async function itemAvailabilityVersion(db: Db, storeId: string): Promise<number> {
  const row = await db
    .selectFrom('stores')
    .select('item_availability_version')
    .where('store_id', '=', storeId)
    .executeTakeFirstOrThrow();
  return row.item_availability_version;
}

/**
 * Set overrides (insert or replace their `until`) and clear others; expired overrides of the
 * store go too, so the table holds what is current. Runs under the store's row lock.
 */
export async function applyOverrides(
  trx: Db,
  storeId: string,
  now: Date,
  change: { set: { itemId: string; until: Date | null }[]; clear: string[] },
): Promise<void> {
  await trx
    .deleteFrom('item_availability_overrides')
    .where('store_id', '=', storeId)
    .where('until', '<=', now)
    .execute();
  if (change.clear.length > 0) {
    await trx
      .deleteFrom('item_availability_overrides')
      .where('store_id', '=', storeId)
      .where('item_id', 'in', change.clear)
      .execute();
  }
  if (change.set.length > 0) {
    await trx
      .insertInto('item_availability_overrides')
      .values(
        change.set.map((item) => ({ store_id: storeId, item_id: item.itemId, until: item.until })),
      )
      .onConflict((oc) =>
        oc
          .columns(['store_id', 'item_id'])
          .doUpdateSet((eb) => ({ until: eb.ref('excluded.until') })),
      )
      .execute();
  }
}

/**
 * Make items unavailable until at least `until`: an override that already lasts longer (or
 * until cleared) keeps its end. Returns each item's resulting `until`.
 */
export async function extendOverrides(
  trx: Db,
  storeId: string,
  itemIds: readonly string[],
  until: Date,
): Promise<{ item_id: string; until: Date | null }[]> {
  return trx
    .insertInto('item_availability_overrides')
    .values(itemIds.map((itemId) => ({ store_id: storeId, item_id: itemId, until })))
    .onConflict((oc) =>
      oc.columns(['store_id', 'item_id']).doUpdateSet({
        until: sql<Date | null>`case
          when item_availability_overrides.until is null
            or item_availability_overrides.until > excluded.until
          then item_availability_overrides.until else excluded.until end`,
      }),
    )
    .returning(['item_id', 'until'])
    .execute();
}

export async function countOverrides(db: Db, storeId: string): Promise<number> {
  const row = await db
    .selectFrom('item_availability_overrides')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('store_id', '=', storeId)
    .executeTakeFirstOrThrow();
  return row.count;
}

/** One page of the store's overridden item ids after `afterItemId`, in order. */
export async function overriddenItemIds(
  db: Db,
  storeId: string,
  afterItemId: string | null,
  limit: number,
): Promise<string[]> {
  let query = db
    .selectFrom('item_availability_overrides')
    .select('item_id')
    .where('store_id', '=', storeId)
    .orderBy('item_id')
    .limit(limit);
  if (afterItemId !== null) query = query.where('item_id', '>', afterItemId);
  const rows = await query.execute();
  return rows.map((row) => row.item_id);
}

export async function deleteOverrides(
  trx: Db,
  storeId: string,
  itemIds: readonly string[],
): Promise<void> {
  await trx
    .deleteFrom('item_availability_overrides')
    .where('store_id', '=', storeId)
    .where('item_id', 'in', itemIds)
    .execute();
}
