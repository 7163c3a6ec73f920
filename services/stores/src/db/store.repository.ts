import { rewrap, runPrepared, seal, type Keyring } from '@pcp/service-kit';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { PartnerMode, SpecialDay } from '@pcp/contracts';
import { submissionSecretBinding } from './secret-binding.js';
import type { NewStoreRow, StoreRow, StoresDatabase, StoreUpdate } from './store.table.js';

type Db = Kysely<StoresDatabase>;

/**
 * Insert the store, or replace its profile when the same partner owns it. Returns
 * undefined when another partner owns that id (the caller answers 404, leaking nothing).
 * A stored order submission secret wins over the row's fresh one: the owner's verification
 * keeps working across upserts, concurrent ones included. `secretCreated` says the row's
 * fresh secret was stored (so this answer is the one that shows it).
 */
export async function upsertStore(
  db: Db,
  row: NewStoreRow,
): Promise<{ store: StoreRow; created: boolean; secretCreated: boolean } | undefined> {
  const {
    store_id: _id,
    partner_id: _partner,
    mode: _mode,
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
  const fresh = row.order_submission_secret ?? null;
  return {
    store,
    created,
    secretCreated: fresh !== null && store.order_submission_secret === fresh,
  };
}

/**
 * Replace the store's order submission secret with `secret` (sealed here, for the store's
 * row); the current one (if any) keeps signing until `overlapEndsAt`. Undefined when the
 * partner has no such store.
 */
export function rotateSubmissionSecret(
  db: Db,
  keyring: Keyring,
  store: { partnerId: string; storeId: string },
  secret: string,
  overlapEndsAt: Date,
) {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('stores')
      .select(['store_id', 'partner_id', 'mode'])
      .where('store_id', '=', store.storeId)
      .where('partner_id', '=', store.partnerId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return undefined;
    return trx
      .updateTable('stores')
      .set({
        order_submission_previous_secret: sql<string | null>`order_submission_secret`,
        order_submission_previous_secret_expires_at: sql<Date | null>`case
          when order_submission_secret is null then null else ${overlapEndsAt}::timestamptz end`,
        order_submission_secret: seal(keyring, submissionSecretBinding(row), secret),
        updated_at: sql<Date>`now()`,
      })
      .where('store_id', '=', store.storeId)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/**
 * Move every stored secret to the keyring's current key, so older keys can leave the
 * keyring; with `rotateDataKey`, each under a fresh data key too
 * (docs/operations.md#secrets-at-rest). Throws (changing nothing) when a secret's key is not
 * in the keyring or a secret does not open for its row.
 */
export async function rewrapSubmissionSecrets(
  db: Db,
  keyring: Keyring,
  options: { rotateDataKey: boolean },
): Promise<{ examined: number; rewrapped: number }> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('stores')
      .select([
        'store_id',
        'partner_id',
        'mode',
        'order_submission_secret',
        'order_submission_previous_secret',
      ])
      .where((eb) =>
        eb.or([
          eb('order_submission_secret', 'is not', null),
          eb('order_submission_previous_secret', 'is not', null),
        ]),
      )
      .forUpdate()
      .execute();
    let rewrapped = 0;
    for (const row of rows) {
      const binding = submissionSecretBinding(row);
      const wrap = (value: string | null) =>
        value === null ? null : rewrap(keyring, binding, value, options);
      const secret = wrap(row.order_submission_secret);
      const previous = wrap(row.order_submission_previous_secret);
      if (
        secret === row.order_submission_secret &&
        previous === row.order_submission_previous_secret
      ) {
        continue;
      }
      await trx
        .updateTable('stores')
        .set({ order_submission_secret: secret, order_submission_previous_secret: previous })
        .where('store_id', '=', row.store_id)
        .execute();
      rewrapped += 1;
    }
    return { examined: rows.length, rewrapped };
  });
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

/** The columns a marketfront lookup shows (toMarketfrontStore), and the store's mode. */
export const MARKETFRONT_COLUMNS = [
  'store_id',
  'mode',
  'name',
  'phone',
  'timezone',
  'currency',
  'address1',
  'address2',
  'city',
  'state',
  'postal_code',
  'country',
  'latitude',
  'longitude',
  'fulfillment_types',
  'availability',
  'delivery_radius_meters',
  'delivery_fee_minor',
  'delivery_minimum_order_minor',
  'delivery_eta_minutes',
  'pickup_eta_minutes',
  'tax_rate_ppm',
  'minimum_order_minor',
  'status',
  'pause_reason',
  'paused_at',
  'resume_at',
  'extra_prep_minutes',
  'paused_by',
  'special_days',
  'acceptance_window_seconds',
  'catalog_set_id',
] as const satisfies readonly (keyof StoreRow)[];

export type MarketfrontRow = Pick<StoreRow, (typeof MARKETFRONT_COLUMNS)[number]>;

// Prepared (planned once per connection) and without the secrets and bookkeeping columns.
const MARKETFRONT_STORE_SQL = `select ${MARKETFRONT_COLUMNS.join(', ')} from stores where store_id = $1`;

/** The store's marketfront columns, whatever its mode (the caller filters on `mode`). */
export async function findMarketfrontStore(
  db: Db,
  storeId: string,
): Promise<MarketfrontRow | undefined> {
  const [row] = await runPrepared<MarketfrontRow>(db as Kysely<unknown>, {
    sql: MARKETFRONT_STORE_SQL,
    parameters: [storeId],
  });
  return row;
}

/**
 * The store as another partner sees it: only a store of `mode` (any store when `mode` is
 * undefined, the platform's own calls). One of the other mode is as absent as an unknown id.
 */
export function findVisibleStore(db: Db, storeId: string, mode: PartnerMode | undefined) {
  const query = db.selectFrom('stores').selectAll().where('store_id', '=', storeId);
  return (mode ? query.where('mode', '=', mode) : query).executeTakeFirst();
}

/** The store's row, locked until the transaction ends. */
export function lockStore(trx: Db, storeId: string) {
  return trx
    .selectFrom('stores')
    .selectAll()
    .where('store_id', '=', storeId)
    .forUpdate()
    .executeTakeFirst();
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
 * redelivery after a newer one) changes nothing. Whether it applied.
 */
export async function recordActiveCatalog(
  db: Db,
  event: { storeId: string; catalogSetId: string; activatedAt: Date; version: number },
): Promise<boolean> {
  const result = await db
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
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export function updateStoreStatus(
  db: Db,
  partnerId: string,
  storeId: string,
  change: Pick<
    StoreUpdate,
    'status' | 'pause_reason' | 'paused_at' | 'resume_at' | 'extra_prep_minutes' | 'paused_by'
  >,
) {
  return db
    .updateTable('stores')
    .set({ ...change, updated_at: sql<Date>`now()` })
    .where('store_id', '=', storeId)
    .where('partner_id', '=', partnerId)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Replace the store's special days with `days` (stored by date), in the caller's transaction
 * so the change and what announces it commit together. Undefined when the partner has no such
 * store.
 */
export function replaceSpecialDays(
  trx: Transaction<StoresDatabase>,
  partnerId: string,
  storeId: string,
  days: readonly SpecialDay[],
) {
  const byDate = [...days].sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
  return trx
    .updateTable('stores')
    .set({ special_days: JSON.stringify(byDate), updated_at: sql<Date>`now()` })
    .where('store_id', '=', storeId)
    .where('partner_id', '=', partnerId)
    .returningAll()
    .executeTakeFirst();
}
