import { subjects } from '@pcp/contracts';
import { AppError, handle, requirePartner, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import {
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

export function storeHandlers(
  db: Kysely<StoresDatabase>,
  geocoder: Geocoder,
  clock: () => Date,
): HandlerBinding[] {
  return [
    handle(subjects.stores.upsert, async ({ storeId, profile }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const { latitude, longitude } = profile.address;
      const location =
        latitude !== undefined && longitude !== undefined
          ? { latitude, longitude }
          : locate(profile.address, geocoder, '/address');
      const result = await upsertStore(db, profileToRow(partnerId, storeId, profile, location));
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
