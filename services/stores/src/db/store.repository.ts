import { sql, type Kysely } from 'kysely';
import type { NewStoreRow, StoreRow, StoresDatabase, StoreUpdate } from './store.table.js';

type Db = Kysely<StoresDatabase>;

/**
 * Insert the store, or replace its profile when the same partner owns it. Returns
 * undefined when another partner owns that id (the caller answers 404, leaking nothing).
 * A stored order submission secret wins over the row's fresh one: the owner's verification
 * keeps working across upserts, concurrent ones included.
 */
export async function upsertStore(
  db: Db,
  row: NewStoreRow,
): Promise<{ store: StoreRow; created: boolean } | undefined> {
  const {
    store_id: _id,
    partner_id: _partner,
    status: _status,
    order_submission_secret: _secret,
    ...profile
  } = row;
  const result = await db
    .insertInto('stores')
    .values(row)
    .onConflict((oc) =>
      oc
        .column('store_id')
        .doUpdateSet((eb) => ({
          ...profile,
          order_submission_secret: eb.fn.coalesce(
            'stores.order_submission_secret',
            'excluded.order_submission_secret',
          ),
          updated_at: sql<Date>`now()`,
        }))
        .where('stores.partner_id', '=', row.partner_id),
    )
    .returningAll()
    // xmax is 0 only for a freshly inserted row version.
    .returning(sql<boolean>`xmax = 0`.as('created'))
    .executeTakeFirst();
  if (!result) return undefined;
  const { created, ...store } = result;
  return { store, created };
}

export async function countPartnerStores(db: Db, partnerId: string): Promise<number> {
  const { count } = await db
    .selectFrom('stores')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('partner_id', '=', partnerId)
    .executeTakeFirstOrThrow();
  return Number(count);
}

export function findPartnerStore(db: Db, partnerId: string, storeId: string) {
  return db
    .selectFrom('stores')
    .selectAll()
    .where('store_id', '=', storeId)
    .where('partner_id', '=', partnerId)
    .executeTakeFirst();
}

export function findStore(db: Db, storeId: string) {
  return db.selectFrom('stores').selectAll().where('store_id', '=', storeId).executeTakeFirst();
}

export async function listPartnerStores(
  db: Db,
  partnerId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: StoreRow[]; totalCount: number }> {
  const [rows, count] = await Promise.all([
    db
      .selectFrom('stores')
      .selectAll()
      .where('partner_id', '=', partnerId)
      .orderBy('created_at')
      .orderBy('store_id')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('stores')
      .select(sql<number>`count(*)::int`.as('count'))
      .where('partner_id', '=', partnerId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, totalCount: count.count };
}

/**
 * Record the store's active CatalogSet from an activation event; an older event (a
 * redelivery after a newer one) changes nothing.
 */
export async function recordActiveCatalog(
  db: Db,
  event: { storeId: string; catalogSetId: string; activatedAt: Date; version: number },
): Promise<void> {
  await db
    .updateTable('stores')
    .set({
      catalog_set_id: event.catalogSetId,
      catalog_activated_at: event.activatedAt,
      catalog_version: event.version,
    })
    .where('store_id', '=', event.storeId)
    .where((eb) =>
      eb.or([eb('catalog_version', 'is', null), eb('catalog_version', '<', event.version)]),
    )
    .execute();
}

export function updateStoreStatus(
  db: Db,
  partnerId: string,
  storeId: string,
  change: Pick<StoreUpdate, 'status' | 'pause_reason' | 'paused_at' | 'resume_at'>,
) {
  return db
    .updateTable('stores')
    .set({ ...change, updated_at: sql<Date>`now()` })
    .where('store_id', '=', storeId)
    .where('partner_id', '=', partnerId)
    .returningAll()
    .executeTakeFirst();
}
