import { subjects } from '@pcp/contracts';
import { AppError, handle, requirePartner, type HandlerBinding } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import {
  countPartnerStores,
  findPartnerStore,
  findStore,
  listPartnerStores,
  upsertStore,
} from '../db/store.repository.js';
import type { StoresDatabase } from '../db/store.table.js';
import { locate, type Geocoder } from '../geocoding/geocoder.js';
import { profileToRow, toCommerceStore, toMarketfrontStore } from '../domain/store-profile.js';

const DEFAULT_PAGE_SIZE = 50;

export const storeNotFound = () => new AppError('STORE_NOT_FOUND', 'No store with that id exists');

function storeLimitReached(maxStores: number): AppError {
  return new AppError(
    'STORE_LIMIT_REACHED',
    `A partner holds at most ${maxStores} stores; this one would be a new one`,
  );
}

export function storeHandlers(
  db: Kysely<StoresDatabase>,
  geocoder: Geocoder,
  clock: () => Date,
  limits: { readonly maxStoresPerPartner: number },
): HandlerBinding[] {
  return [
    handle(subjects.stores.upsert, async ({ storeId, profile }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const { latitude, longitude } = profile.address;
      const location =
        latitude !== undefined && longitude !== undefined
          ? { latitude, longitude }
          : locate(profile.address, geocoder, '/address');
      const row = profileToRow(partnerId, storeId, profile, location);
      const result = await db.transaction().execute(async (trx) => {
        // The partner's creations one at a time, so concurrent ones cannot pass the limit.
        await sql`select pg_advisory_xact_lock(hashtextextended(${`stores/${partnerId}`}, 0))`.execute(
          trx,
        );
        const isNew = (await findStore(trx, storeId)) === undefined;
        if (isNew && (await countPartnerStores(trx, partnerId)) >= limits.maxStoresPerPartner) {
          throw storeLimitReached(limits.maxStoresPerPartner);
        }
        return upsertStore(trx, row);
      });
      // Another partner's id: answer as if it did not exist.
      if (!result) throw storeNotFound();
      return { store: toCommerceStore(result.store, clock()), created: result.created };
    }),

    handle(subjects.stores.get, async ({ storeId }, ctx) => {
      const row = await findPartnerStore(db, requirePartner(ctx, 'commerce'), storeId);
      if (!row) throw storeNotFound();
      return toCommerceStore(row, clock());
    }),

    handle(subjects.stores.list, async ({ limit = DEFAULT_PAGE_SIZE, offset = 0 }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const { rows, totalCount } = await listPartnerStores(db, partnerId, { limit, offset });
      const now = clock();
      return {
        stores: rows.map((row) => toCommerceStore(row, now)),
        totalCount,
        hasMore: offset + rows.length < totalCount,
      };
    }),

    handle(subjects.stores.lookup, async ({ storeId }, ctx) => {
      requirePartner(ctx, 'distribution');
      const row = await findStore(db, storeId);
      if (!row) throw storeNotFound();
      return toMarketfrontStore(row, clock());
    }),
  ];
}
