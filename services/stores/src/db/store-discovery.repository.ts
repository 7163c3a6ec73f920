import type { Coordinates, FulfillmentType, PartnerMode, SpecialDay } from '@pcp/contracts';
import { runPrepared, type Statement } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { EARTH_RADIUS_METERS } from '@pcp/contracts';
import { boundingBox, DEGREE_GRID, snapDegrees } from '../domain/geo.js';
import type { ScanPosition } from '../domain/open-store-scan.js';
import { MARKETFRONT_COLUMNS, type MarketfrontRow } from './store.repository.js';
import type { StoreRow, StoresDatabase } from './store.table.js';

type Db = Kysely<StoresDatabase>;

/**
 * Every discovery statement runs prepared: its text is fixed (the location, radius and page
 * are parameters), and planning it anew each time cost Postgres more than running it (about
 * half of its CPU per discovery, npm run bench -- discovery).
 */
const run = <Row>(db: Db, statement: Statement) =>
  runPrepared<Row>(db as Kysely<unknown>, statement);

export type DiscoveredRow = MarketfrontRow & { distance_meters: number };

/** What a discovered store shows: no secrets, no bookkeeping columns to send and decode. */
const PAGE_COLUMNS = MARKETFRONT_COLUMNS.map((column) => `stores.${column}` as const);

export interface DiscoveryQuery {
  center: Coordinates;
  fulfillmentType: FulfillmentType;
  /** Case-insensitive substring of the store name. */
  query: string | undefined;
  /** Pickup: how far to look. Delivery: the largest delivery radius of any store. */
  searchRadiusMeters: number;
  /** Only stores of this mode (docs/guide/sandbox.md#modes); undefined: every store. */
  mode: PartnerMode | undefined;
}

const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

/**
 * Stores that offer the fulfillment type near `center` as `(store_id, distance_meters)`,
 * to be ordered nearest first (ties by id, so pages are stable). A GiST box prefilter,
 * then the exact haversine distance; delivery keeps only stores whose own radius reaches
 * the customer.
 */
function nearbyStores(db: Db, q: DiscoveryQuery) {
  const box = boundingBox(q.center, q.searchRadiusMeters);
  const latitude = snapDegrees(q.center.latitude);
  const longitude = snapDegrees(q.center.longitude);
  // The stored coordinates are snapped too (stores written before the snap, or tiny ones).
  const rowLatitude = sql<number>`(round(latitude * ${DEGREE_GRID}::double precision) / ${DEGREE_GRID}::double precision)`;
  const rowLongitude = sql<number>`(round(longitude * ${DEGREE_GRID}::double precision) / ${DEGREE_GRID}::double precision)`;
  const distance = sql<number>`2 * ${EARTH_RADIUS_METERS}::double precision * asin(least(1, sqrt(
      power(sin(radians(${rowLatitude} - ${latitude}) / 2), 2)
      + cos(radians(${latitude})) * cos(radians(${rowLatitude})) * power(sin(radians(${rowLongitude} - ${longitude}) / 2), 2))))`;
  const reach =
    q.fulfillmentType === 'DELIVERY_BY_MERCHANT'
      ? sql<number>`delivery_radius_meters`
      : sql<number>`${q.searchRadiusMeters}::double precision`;
  return db
    .selectFrom((eb) =>
      eb
        .selectFrom('stores')
        .select([
          'store_id',
          'delivery_radius_meters',
          'status',
          'resume_at',
          'availability',
          'special_days',
          'timezone',
          distance.as('distance_meters'),
        ])
        .where(
          sql<boolean>`point(longitude, latitude) <@ box(point(${box.minLongitude}, ${box.minLatitude}), point(${box.maxLongitude}, ${box.maxLatitude}))`,
        )
        .where(sql<boolean>`${q.fulfillmentType} = any(fulfillment_types)`)
        .$if(q.mode !== undefined, (qb) => qb.where('mode', '=', q.mode ?? 'live'))
        .$if(q.query !== undefined, (qb) =>
          qb.where(sql<boolean>`name ilike ${`%${likeEscaped(q.query ?? '')}%`}`),
        )
        .as('nearby'),
    )
    .where(sql<boolean>`distance_meters <= ${reach}`);
}

/**
 * One page of the matching stores, nearest first, each with how many match in all, in one
 * statement: ranked and counted from the columns the location index carries, then joined
 * to the whole rows of the page only.
 */
export function discoveryPageQuery(
  db: Db,
  q: DiscoveryQuery,
  page: { limit: number; offset: number },
) {
  return db
    .with('ranked', () =>
      nearbyStores(db, q)
        .select([
          'store_id',
          'distance_meters',
          sql<number>`count(*) over ()::int`.as('total_count'),
        ])
        .orderBy('distance_meters')
        .orderBy('store_id')
        .limit(page.limit)
        .offset(page.offset),
    )
    .selectFrom('ranked')
    .innerJoin('stores', 'stores.store_id', 'ranked.store_id')
    .select(PAGE_COLUMNS)
    .select(['ranked.distance_meters', 'ranked.total_count'])
    .orderBy('ranked.distance_meters')
    .orderBy('ranked.store_id');
}

/** One page of the matching stores, nearest first, and how many match in all. */
export async function discoverStores(
  db: Db,
  q: DiscoveryQuery,
  page: { limit: number; offset: number },
): Promise<{ rows: DiscoveredRow[]; totalCount: number }> {
  const rows = await run<DiscoveredRow & { total_count: number }>(
    db,
    discoveryPageQuery(db, q, page).compile(),
  );
  let totalCount = rows[0]?.total_count ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    // A page past the end carries no window count; count on its own.
    const [counted] = await run<{ total_count: number }>(
      db,
      nearbyStores(db, q)
        .select(sql<number>`count(*)::int`.as('total_count'))
        .compile(),
    );
    totalCount = counted?.total_count ?? 0;
  }
  return { rows, totalCount };
}

/** A candidate of a scheduled discovery: what deciding whether it is open at an instant needs. */
export type DiscoveryCandidate = Pick<
  StoreRow,
  'store_id' | 'status' | 'resume_at' | 'availability' | 'special_days' | 'timezone'
> & { distance_meters: number };

/**
 * The store's special days on the dates `at` can have in some time zone (its UTC date and a
 * day either side: offsets run −12 to +14 hours): all an open-at-`at` check reads, so a scan
 * does not carry each store's whole year of special days.
 */
function specialDaysAround(at: Date) {
  const date = at.toISOString().slice(0, 10);
  return sql<SpecialDay[]>`coalesce((select jsonb_agg(special_day)
    from jsonb_array_elements(special_days) special_day
    where (special_day->>'date')::date - ${date}::date between -1 and 1), '[]'::jsonb)`;
}

/**
 * The next `limit` matching stores nearest first after `after` (keyset: distance, then id),
 * with the columns their opening hours need, for the caller to filter by opening hours
 * (which live in each store's time zone). Distances are recomputed by the same expression
 * on every call, so the keyset compares equal values exactly.
 */
export function nearestCandidatesQuery(
  db: Db,
  q: DiscoveryQuery,
  batch: { after: ScanPosition | undefined; limit: number; at: Date },
) {
  let candidates = nearbyStores(db, q).select([
    'store_id',
    'status',
    'resume_at',
    'availability',
    specialDaysAround(batch.at).as('special_days'),
    'timezone',
    'distance_meters',
  ]);
  const { after } = batch;
  if (after) {
    candidates = candidates.where(
      sql<boolean>`(distance_meters, store_id) > (${after.distance_meters}::double precision, ${after.store_id}::uuid)`,
    );
  }
  return candidates.orderBy('distance_meters').orderBy('store_id').limit(batch.limit);
}

/** The batch of {@link nearestCandidatesQuery}. */
export function nearestCandidates(
  db: Db,
  q: DiscoveryQuery,
  batch: { after: ScanPosition | undefined; limit: number; at: Date },
): Promise<DiscoveryCandidate[]> {
  return run<DiscoveryCandidate>(db, nearestCandidatesQuery(db, q, batch).compile());
}

/**
 * Whole rows of a page of matches, in the matches' order. The ids travel as one array
 * parameter, so the statement's size does not grow with the page.
 */
export async function loadStores(
  db: Db,
  matches: readonly ScanPosition[],
): Promise<DiscoveredRow[]> {
  if (matches.length === 0) return [];
  const ids = matches.map((match) => match.store_id);
  const rows = await run<MarketfrontRow>(
    db,
    db
      .selectFrom('stores')
      .select(MARKETFRONT_COLUMNS)
      .where(sql<boolean>`store_id = any(${ids}::uuid[])`)
      .compile(),
  );
  const byId = new Map(rows.map((row) => [row.store_id, row]));
  return matches.flatMap((match) => {
    const row = byId.get(match.store_id);
    return row ? [{ ...row, distance_meters: match.distance_meters }] : [];
  });
}

/** The largest delivery radius of any store (an index probe): the delivery search box. */
export async function maxDeliveryRadius(db: Db): Promise<number> {
  const [row] = await run<{ radius: number | null }>(
    db,
    db
      .selectFrom('stores')
      .select(sql<number | null>`max(delivery_radius_meters)`.as('radius'))
      .compile(),
  );
  return row?.radius ?? 0;
}
