import type { Coordinates, FulfillmentType } from '@pcp/contracts';
import { sql, type Kysely } from 'kysely';
import { boundingBox, EARTH_RADIUS_METERS } from '../domain/geo.js';
import type { StoreRow, StoresDatabase } from './store.table.js';

type Db = Kysely<StoresDatabase>;

export type DiscoveredRow = StoreRow & { distance_meters: number };

export interface DiscoveryQuery {
  center: Coordinates;
  fulfillmentType: FulfillmentType;
  /** Case-insensitive substring of the store name. */
  query: string | undefined;
  /** Pickup: how far to look. Delivery: the largest delivery radius of any store. */
  searchRadiusMeters: number;
  /** A page, or every match (when the caller filters further, e.g. by opening hours). */
  page: { limit: number; offset: number } | 'all';
}

const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

/**
 * Stores that offer the fulfillment type near `center`, nearest first (ties by id, so pages
 * are stable). A GiST box prefilter, then the exact haversine distance; delivery keeps
 * only stores whose own radius reaches the customer.
 */
export async function discoverStores(
  db: Db,
  q: DiscoveryQuery,
): Promise<{ rows: DiscoveredRow[]; totalCount: number }> {
  const box = boundingBox(q.center, q.searchRadiusMeters);
  const { latitude, longitude } = q.center;
  const distance = sql<number>`2 * ${EARTH_RADIUS_METERS}::double precision * asin(least(1, sqrt(
      power(sin(radians(latitude - ${latitude}) / 2), 2)
      + cos(radians(${latitude})) * cos(radians(latitude)) * power(sin(radians(longitude - ${longitude}) / 2), 2))))`;
  const reach =
    q.fulfillmentType === 'DELIVERY_BY_MERCHANT'
      ? sql<number>`delivery_radius_meters`
      : sql<number>`${q.searchRadiusMeters}::double precision`;

  // Rank and count from the narrow columns; load whole rows only for the page.
  let ranked = db
    .selectFrom((eb) =>
      eb
        .selectFrom('stores')
        .select(['store_id', 'delivery_radius_meters', distance.as('distance_meters')])
        .where(
          sql<boolean>`point(longitude, latitude) <@ box(point(${box.minLongitude}, ${box.minLatitude}), point(${box.maxLongitude}, ${box.maxLatitude}))`,
        )
        .where(sql<boolean>`${q.fulfillmentType} = any(fulfillment_types)`)
        .$if(q.query !== undefined, (qb) =>
          qb.where(sql<boolean>`name ilike ${`%${likeEscaped(q.query ?? '')}%`}`),
        )
        .as('nearby'),
    )
    .select(['store_id', 'distance_meters', sql<number>`count(*) over ()::int`.as('total_count')])
    .where(sql<boolean>`distance_meters <= ${reach}`)
    .orderBy('distance_meters')
    .orderBy('store_id');
  if (q.page !== 'all') ranked = ranked.limit(q.page.limit).offset(q.page.offset);
  const page = await ranked.execute();

  let totalCount = page[0]?.total_count ?? 0;
  if (page.length === 0 && q.page !== 'all' && q.page.offset > 0) {
    // A page past the end carries no window count; count on its own.
    totalCount = (await discoverStores(db, { ...q, page: { limit: 1, offset: 0 } })).totalCount;
  }
  if (page.length === 0) return { rows: [], totalCount };
  const rows = await db
    .selectFrom('stores')
    .selectAll()
    .where(
      'store_id',
      'in',
      page.map((match) => match.store_id),
    )
    .execute();
  const byId = new Map(rows.map((row) => [row.store_id, row]));
  return {
    rows: page.flatMap((match) => {
      const row = byId.get(match.store_id);
      return row ? [{ ...row, distance_meters: match.distance_meters }] : [];
    }),
    totalCount,
  };
}

/** The largest delivery radius of any store (an index probe): the delivery search box. */
export async function maxDeliveryRadius(db: Db): Promise<number> {
  const row = await db
    .selectFrom('stores')
    .select(sql<number | null>`max(delivery_radius_meters)`.as('radius'))
    .executeTakeFirst();
  return row?.radius ?? 0;
}
