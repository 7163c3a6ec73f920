import { subjects } from '@pcp/contracts';
import { handle, requirePartner, visibleMode, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { findVisibleStore } from '../db/store.repository.js';
import {
  discoverStores,
  loadStores,
  maxDeliveryRadius,
  nearestCandidates,
  type DiscoveredRow,
  type DiscoveryCandidate,
  type DiscoveryQuery,
} from '../db/store-discovery.repository.js';
import type { StoresDatabase } from '../db/store.table.js';
import { scanOpenCandidates } from '../domain/open-store-scan.js';
import { isOpenAt } from '../domain/store-availability.js';
import { toMarketfrontStore, toOrderContext, toOrderProfile } from '../domain/store-profile.js';
import { locate, type Geocoder } from '../geocoding/geocoder.js';
import { storeNotFound } from './store.handlers.js';

/** How far pickup discovery looks (the contract names no radius for pickup). */
export const PICKUP_SEARCH_RADIUS_METERS = 50_000;
const DEFAULT_PAGE_SIZE = 50;

export interface DiscoveryOptions {
  /** With a scheduledTime, the nearest matching stores examined at most (STORES_DISCOVERY_SCAN_CAP). */
  scanCap: number;
}

export function discoveryHandlers(
  db: Kysely<StoresDatabase>,
  geocoder: Geocoder,
  clock: () => Date,
  options: DiscoveryOptions,
): HandlerBinding[] {
  /**
   * The largest delivery radius as the last delivery page read it. The delivery search box
   * is drawn from it and the page reports the radius it saw: when they differ (a store's
   * radius changed, maybe on another replica) the page is searched again with that radius,
   * so every answer is the one the radius read by a statement of its own would give.
   */
  let knownDeliveryRadius: number | undefined;

  /** A page without a scheduledTime: delivery's in one statement while the radius holds. */
  async function discoverPage(
    query: Omit<DiscoveryQuery, 'searchRadiusMeters'>,
    page: { limit: number; offset: number },
  ) {
    if (query.fulfillmentType !== 'DELIVERY_BY_MERCHANT') {
      const searchRadiusMeters = PICKUP_SEARCH_RADIUS_METERS;
      return discoverStores(db, { ...query, searchRadiusMeters }, page);
    }
    const remembered = knownDeliveryRadius;
    const searchRadiusMeters = remembered ?? (await maxDeliveryRadius(db));
    const found = await discoverStores(db, { ...query, searchRadiusMeters }, page);
    // An empty page carries no radius: read it on its own, unless it was just read.
    const radius =
      found.maxDeliveryRadius ??
      (remembered === undefined ? searchRadiusMeters : await maxDeliveryRadius(db));
    knownDeliveryRadius = radius;
    if (remembered === undefined || radius === searchRadiusMeters) return found;
    // The radius changed since it was remembered: search with the one just read.
    const again = await discoverStores(db, { ...query, searchRadiusMeters: radius }, page);
    knownDeliveryRadius = again.maxDeliveryRadius ?? radius;
    return again;
  }

  return [
    handle(subjects.stores.discover, async (input, ctx) => {
      const center = locate(input.location, geocoder, '/location');
      const limit = input.limit ?? DEFAULT_PAGE_SIZE;
      const offset = input.offset ?? 0;
      const now = clock();
      const view = (row: DiscoveredRow) => ({
        ...toMarketfrontStore(row, now),
        distanceMeters: Math.round(row.distance_meters),
      });
      const search = {
        center,
        fulfillmentType: input.fulfillmentType,
        query: input.query,
        mode: visibleMode(ctx),
      };

      if (!input.scheduledTime) {
        const { rows, totalCount } = await discoverPage(search, { limit, offset });
        return { stores: rows.map(view), totalCount, hasMore: offset + rows.length < totalCount };
      }
      const searchRadiusMeters =
        input.fulfillmentType === 'DELIVERY_BY_MERCHANT'
          ? await maxDeliveryRadius(db)
          : PICKUP_SEARCH_RADIUS_METERS;
      const query = { ...search, searchRadiusMeters };
      // Opening hours live in each store's time zone and depend on pauses: candidates are
      // filtered here, exactly, a batch at a time, until the page and one more open store.
      const at = new Date(input.scheduledTime);
      const found = await scanOpenCandidates({
        offset,
        limit,
        scanCap: options.scanCap,
        isOpen: (candidate: DiscoveryCandidate) => isOpenAt(candidate, at),
        nextBatch: (after, size) => nearestCandidates(db, query, { after, limit: size, at }),
      });
      const page = await loadStores(db, found.page);
      return { stores: page.map(view), totalCount: found.openCount, hasMore: found.hasMore };
    }),

    handle(subjects.stores.orderProfile, async ({ storeId }, ctx) => {
      requirePartner(ctx, 'distribution');
      const row = await findVisibleStore(db, storeId, visibleMode(ctx));
      if (!row) throw storeNotFound();
      return toOrderProfile(row);
    }),

    handle(subjects.stores.orderContext, async ({ storeId, at }, ctx) => {
      requirePartner(ctx, 'distribution');
      const row = await findVisibleStore(db, storeId, visibleMode(ctx));
      if (!row) throw storeNotFound();
      const now = clock();
      return toOrderContext(row, now, at ? new Date(at) : now);
    }),

    handle(subjects.stores.geocode, ({ address }) => {
      const { latitude, longitude } = locate(address, geocoder, '/address');
      return Promise.resolve({
        latitude,
        longitude,
        address: { ...address, address2: address.address2 ?? null },
      });
    }),
  ];
}
