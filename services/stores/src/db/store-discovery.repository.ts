import type { Coordinates, FulfillmentType, PartnerMode } from '@pcp/contracts';
import { runPrepared, type Statement } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { EARTH_RADIUS_METERS } from '@pcp/contracts';
import { boundingBox, DEGREE_GRID, snapDegrees } from '../domain/geo.js';
import type { ScanPosition } from '../domain/open-store-scan.js';
import { MARKETFRONT_COLUMNS, type MarketfrontRow } from './store.repository.js';
import type { StoreRow, StoresDatabase } from './store.table.js';

type Db = Kysely<StoresDatabase>;

/**
 * Every discovery statement runs prepared: its text is fixed for each shape of search (the
 * location, radius and page are parameters), and planning it anew each time cost Postgres
 * more than running it (about half of its CPU per discovery, npm run bench -- discovery).
 * The texts are written here rather than built with Kysely: building and compiling the page
 * query was about a tenth of the service's CPU per discovery.
 */
const run = <Row>(db: Db, statement: Statement) =>
  runPrepared<Row>(db as Kysely<unknown>, statement);

export type DiscoveredRow = MarketfrontRow & { distance_meters: number };

/** What a discovered store shows: no secrets, no bookkeeping columns to send and decode. */
const PAGE_COLUMNS = MARKETFRONT_COLUMNS.map((column) => `stores.${column}`).join(', ');

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

/** A statement's parameters as they are added: `add(value)` answers its placeholder. */
function parameterList() {
  const parameters: unknown[] = [];
  const add = (value: unknown) => {
    parameters.push(value);
    return `$${parameters.length}`;
  };
  return { parameters, add };
}

type AddParameter = ReturnType<typeof parameterList>['add'];

/** `column` on the DEGREE_GRID: stored coordinates are snapped too (stores written before the snap, or tiny ones). */
const snappedColumn = (column: string) =>
  `(round(${column} * ${DEGREE_GRID}::double precision) / ${DEGREE_GRID}::double precision)`;

/**
 * Stores that offer the fulfillment type near `center` with `columns` and `distance_meters`,
 * as a derived table to be ordered nearest first (ties by id, so pages are stable). A GiST
 * box prefilter, then the exact haversine distance, computed once per store; delivery keeps
 * only stores whose own radius reaches the customer. Only the mode and name filters change
 * the text.
 */
function nearbyStores(q: DiscoveryQuery, add: AddParameter, columns: readonly string[]): string {
  const box = boundingBox(q.center, q.searchRadiusMeters);
  const latitude = `${add(snapDegrees(q.center.latitude))}::double precision`;
  const longitude = `${add(snapDegrees(q.center.longitude))}::double precision`;
  const distance = `2 * ${EARTH_RADIUS_METERS}::double precision * asin(least(1, sqrt(
      power(sin(radians(${snappedColumn('latitude')} - ${latitude}) / 2), 2)
      + cos(radians(${latitude})) * cos(radians(${snappedColumn('latitude')}))
        * power(sin(radians(${snappedColumn('longitude')} - ${longitude}) / 2), 2))))`;
  const reach =
    q.fulfillmentType === 'DELIVERY_BY_MERCHANT'
      ? 'delivery_radius_meters'
      : `${add(q.searchRadiusMeters)}::double precision`;
  const searchBox = `box(point(${add(box.minLongitude)}, ${add(box.minLatitude)}), point(${add(box.maxLongitude)}, ${add(box.maxLatitude)}))`;
  const filters = [
    `point(longitude, latitude) <@ ${searchBox}`,
    `${add(q.fulfillmentType)}::text = any(fulfillment_types)`,
    ...(q.mode !== undefined ? [`mode = ${add(q.mode)}::text`] : []),
    ...(q.query !== undefined ? [`name ilike ${add(`%${likeEscaped(q.query)}%`)}::text`] : []),
  ];
  // offset 0 keeps the derived table from being flattened into its callers, which would
  // evaluate the haversine twice per store: in the radius filter, then for the ranking
  // (about a fifth of Postgres's time for a pickup page in a dense city).
  return `(select ${[...columns, 'delivery_radius_meters'].join(', ')}, ${distance} as distance_meters
    from stores where ${filters.join(' and ')} offset 0) as nearby
    where distance_meters <= ${reach}`;
}

const MAX_DELIVERY_RADIUS_SQL = 'select max(delivery_radius_meters) as radius from stores';

/**
 * One page of the matching stores, nearest first, each with how many match in all, in one
 * statement: ranked and counted from the columns the location index carries, then joined
 * to the whole rows of the page only. A delivery page's rows also carry the largest delivery
 * radius as the statement saw it, so a radius remembered from an earlier search is checked
 * without a statement of its own.
 */
export function discoveryPageStatement(
  q: DiscoveryQuery,
  page: { limit: number; offset: number },
): Statement {
  const { parameters, add } = parameterList();
  const nearby = nearbyStores(q, add, ['store_id']);
  const radius =
    q.fulfillmentType === 'DELIVERY_BY_MERCHANT'
      ? `, (${MAX_DELIVERY_RADIUS_SQL}) as max_delivery_radius`
      : '';
  const sql = `with ranked as (
      select store_id, distance_meters, count(*) over ()::int as total_count from ${nearby}
      order by distance_meters, store_id limit ${add(page.limit)} offset ${add(page.offset)})
    select ${PAGE_COLUMNS}, ranked.distance_meters, ranked.total_count${radius}
    from ranked join stores on stores.store_id = ranked.store_id
    order by ranked.distance_meters, ranked.store_id`;
  return { sql, parameters };
}

/** How many stores match in all. */
function matchCountStatement(q: DiscoveryQuery): Statement {
  const { parameters, add } = parameterList();
  const nearby = nearbyStores(q, add, ['store_id']);
  return { sql: `select count(*)::int as total_count from ${nearby}`, parameters };
}

/**
 * One page of the matching stores, nearest first, and how many match in all. A delivery
 * page also says the largest delivery radius when it was read (undefined for an empty page).
 */
export async function discoverStores(
  db: Db,
  q: DiscoveryQuery,
  page: { limit: number; offset: number },
): Promise<{ rows: DiscoveredRow[]; totalCount: number; maxDeliveryRadius: number | undefined }> {
  const rows = await run<
    DiscoveredRow & { total_count: number; max_delivery_radius?: number | null }
  >(db, discoveryPageStatement(q, page));
  const [first] = rows;
  let totalCount = first?.total_count ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    // A page past the end carries no window count; count on its own.
    const [counted] = await run<{ total_count: number }>(db, matchCountStatement(q));
    totalCount = counted?.total_count ?? 0;
  }
  const radius = first?.max_delivery_radius;
  return { rows, totalCount, maxDeliveryRadius: radius === undefined ? undefined : (radius ?? 0) };
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
function specialDaysAround(at: Date, add: AddParameter): string {
  const date = add(at.toISOString().slice(0, 10));
  return `coalesce((select jsonb_agg(special_day)
    from jsonb_array_elements(special_days) special_day
    where (special_day->>'date')::date - ${date}::date between -1 and 1), '[]'::jsonb)`;
}

/**
 * The next `limit` matching stores nearest first after `after` (keyset: distance, then id),
 * with the columns their opening hours need, for the caller to filter by opening hours
 * (which live in each store's time zone). Distances are recomputed by the same expression
 * on every call, so the keyset compares equal values exactly.
 */
export function nearestCandidatesStatement(
  q: DiscoveryQuery,
  batch: { after: ScanPosition | undefined; limit: number; at: Date },
): Statement {
  const { parameters, add } = parameterList();
  const specialDays = specialDaysAround(batch.at, add);
  const nearby = nearbyStores(q, add, [
    'store_id',
    'status',
    'resume_at',
    'availability',
    'special_days',
    'timezone',
  ]);
  const { after } = batch;
  const afterFilter = after
    ? ` and (distance_meters, store_id) > (${add(after.distance_meters)}::double precision, ${add(after.store_id)}::uuid)`
    : '';
  const sql = `select store_id, status, resume_at, availability, ${specialDays} as special_days,
      timezone, distance_meters
    from ${nearby}${afterFilter}
    order by distance_meters, store_id limit ${add(batch.limit)}`;
  return { sql, parameters };
}

/** The batch of {@link nearestCandidatesStatement}. */
export function nearestCandidates(
  db: Db,
  q: DiscoveryQuery,
  batch: { after: ScanPosition | undefined; limit: number; at: Date },
): Promise<DiscoveryCandidate[]> {
  return run<DiscoveryCandidate>(db, nearestCandidatesStatement(q, batch));
}

// The ids travel as one array parameter, so the statement's size does not grow with the page.
const STORES_BY_ID_SQL = `select ${MARKETFRONT_COLUMNS.join(', ')} from stores where store_id = any($1::uuid[])`;

/** Whole rows of a page of matches, in the matches' order. */
export async function loadStores(
  db: Db,
  matches: readonly ScanPosition[],
): Promise<DiscoveredRow[]> {
  if (matches.length === 0) return [];
  const ids = matches.map((match) => match.store_id);
  const rows = await run<MarketfrontRow>(db, { sql: STORES_BY_ID_SQL, parameters: [ids] });
  const byId = new Map(rows.map((row) => [row.store_id, row]));
  return matches.flatMap((match) => {
    const row = byId.get(match.store_id);
    return row ? [{ ...row, distance_meters: match.distance_meters }] : [];
  });
}

/** The largest delivery radius of any store (an index probe): the delivery search box. */
export async function maxDeliveryRadius(db: Db): Promise<number> {
  const [row] = await run<{ radius: number | null }>(db, {
    sql: MAX_DELIVERY_RADIUS_SQL,
    parameters: [],
  });
  return row?.radius ?? 0;
}
