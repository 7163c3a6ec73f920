import { subjects, type DiscoverStoresInput } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  type BusClient,
  type RequestContext,
  type ServiceInstance,
} from '@pcp/service-kit';
import { CompiledQuery, sql, type Kysely, type RawBuilder } from 'kysely';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { expectAppError } from '@pcp/testing/expect-app-error';
import { storeProfile } from '@pcp/testing/fixtures';
import {
  createStoresService,
  storesEnvSchema,
  STORES_SCHEMA,
  type StoresDatabase,
} from '../../src/app.js';
import { discoveryPageStatement } from '../../src/db/store-discovery.repository.js';
import { SCAN_BATCH_MAX } from '../../src/domain/open-store-scan.js';
import { PICKUP_SEARCH_RADIUS_METERS } from '../../src/handlers/discovery.handlers.js';

/** The service's scan cap here (STORES_DISCOVERY_SCAN_CAP). */
const SCAN_CAP = 20_000;
/** Tuesday 2026-11-24, 18:00 UTC (noon in Chicago). */
const tuesdayNoon = '2026-11-24T18:00:00.000Z';
const crowded = { latitude: 41.88, longitude: -87.63 };
const mostlyClosed = { latitude: 44.98, longitude: -93.27 };
const closedNearest = { latitude: 39.1, longitude: -94.58 };

let env: TestEnvironment;
let db: Kysely<StoresDatabase>;
let service: ServiceInstance;
let client: BusClient;

/** What each statement reading stores (discovery's) cost: its parameters and rows returned. */
const statements = { parameters: [] as number[], rows: [] as number[] };
type QueryArgs = Parameters<pg.Client['query']>;
const clientQuery = pg.Client.prototype.query;
/**
 * Client.query, recording the statements that read the stores table. Discovery runs them
 * prepared, straight on the pool, so they are seen here, below Kysely; the outbox relay's
 * ticks run on the same database and read no stores.
 */
function recordingQuery(this: pg.Client, ...args: unknown[]): unknown {
  const [first, second] = args;
  const config = typeof first === 'string' ? { text: first } : (first as pg.QueryConfig);
  const text = config.text ?? '';
  if (!/\bfrom "?stores\b/.test(text) || text.includes('outbox')) {
    return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
  }
  statements.parameters.push(((Array.isArray(second) ? second : config.values) ?? []).length);
  const record = (result: pg.QueryResult) => statements.rows.push(result.rows.length);
  const callback = args.at(-1);
  if (typeof callback === 'function') {
    const done = callback as (error: Error | null, result?: pg.QueryResult) => void;
    args[args.length - 1] = (error: Error | null, result?: pg.QueryResult) => {
      if (!error && result) record(result);
      done(error, result);
    };
    return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
  }
  return (clientQuery as (...a: unknown[]) => Promise<pg.QueryResult>)
    .apply(this, args as QueryArgs)
    .then((result) => {
      record(result);
      return result;
    });
}

const distribution = (): RequestContext => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution',
  mode: 'live',
});
const discover = (input: DiscoverStoresInput) =>
  client.request(subjects.stores.discover, input, distribution());
const scheduled = (location: typeof crowded, extra: Partial<DiscoverStoresInput> = {}) =>
  discover({ location, fulfillmentType: 'PICKUP', scheduledTime: tuesdayNoon, ...extra });
const seededNumbers = (stores: { name: string }[]) =>
  stores.map((store) => Number(store.name.slice('Seeded '.length)));

/**
 * `count` pickup stores named `Seeded <n>` due north of `center`, `n` ascending with distance
 * and `perPosition` of them at each position (ties, broken by id), inserted by one
 * statement. Stores where `open` holds are open all Tuesday; where `paused` holds, open all
 * Tuesday but paused without end; the rest open on Wednesdays only.
 */
async function seed(
  center: typeof crowded,
  count: number,
  rules: { perPosition?: number; open: RawBuilder<boolean>; paused?: RawBuilder<boolean> },
) {
  const day = (dayOfWeek: string) =>
    JSON.stringify([{ dayOfWeek, start: '00:00:00', end: '00:00:00' }]);
  const paused = rules.paused ?? sql<boolean>`false`;
  await sql`
    insert into stores (store_id, partner_id, name, phone, timezone, currency, address1, city,
      state, postal_code, country, latitude, longitude, fulfillment_types, availability,
      pickup_eta_minutes, tax_rate_ppm, minimum_order_minor, status, pause_reason, paused_at,
      paused_by)
    select gen_random_uuid(), gen_random_uuid(), 'Seeded ' || n, '+13125550100',
      'America/Chicago', 'USD', '1 Main St', 'Chicago', 'IL', '60601', 'US',
      ${center.latitude} + ceil(n::double precision / ${rules.perPosition ?? 1}) * 0.0000004,
      ${center.longitude}, array['PICKUP'],
      case when ${rules.open} or ${paused} then ${day('Tuesday')}::jsonb
        else ${day('Wednesday')}::jsonb end,
      15, 0, 0,
      case when ${paused} then 'paused' else 'online' end,
      case when ${paused} then 'too_busy' end,
      case when ${paused} then now() end,
      case when ${paused} then 'partner' end
    from generate_series(1, ${count}) as n
  `.execute(db);
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Heap Fetches'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

beforeAll(async () => {
  env = await createTestEnvironment();
  pg.Client.prototype.query = recordingQuery as typeof clientQuery;
  db = createDatabase<StoresDatabase>({
    url: env.databaseUrl,
    schema: STORES_SCHEMA,
    maxConnections: 4,
    applicationName: 'discovery-bounds-test',
  });
  service = createStoresService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('stores'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 20_000,
    db,
    config: { ...storesEnvSchema.parse({}), STORES_DISCOVERY_SCAN_CAP: SCAN_CAP },
  });
  await service.start();
  client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 20_000, logger: env.logger });
  // 70,000 open stores within 1.5 km, seven at each position.
  await seed(crowded, 70_000, { perPosition: 7, open: sql<boolean>`true` });
  // The nearest 4,000 closed (by hours, or paused); then one in ten open, one in ten paused.
  await seed(mostlyClosed, 6_000, {
    open: sql<boolean>`n > 4000 and n % 10 = 0`,
    paused: sql<boolean>`n % 10 = 5`,
  });
  // As many closed stores as the scan examines, then open ones beyond them.
  await seed(closedNearest, SCAN_CAP + 50, { open: sql<boolean>`n > ${SCAN_CAP}` });
  // As autovacuum does after bulk inserts: index-only scans need the visibility map.
  await sql`vacuum (analyze) stores`.execute(db);
}, 120_000);

afterAll(async () => {
  pg.Client.prototype.query = clientQuery;
  await service?.stop();
  await db?.destroy();
  await env?.cleanup();
});

beforeEach(() => {
  statements.parameters.length = 0;
  statements.rows.length = 0;
});

describe('discovery without a scheduledTime', () => {
  it('ranks and counts in one statement, from the location index alone', async () => {
    const page = await discover({ location: mostlyClosed, fulfillmentType: 'PICKUP', limit: 20 });
    expect(page.stores).toHaveLength(20);
    expect(page.totalCount).toBe(6_000);
    expect(statements.rows).toEqual([20]);

    // The plan: every store in the search box is ranked from the index (no heap page read
    // for any of the 6,000); only the page's 20 whole rows come from the table.
    const compiled = discoveryPageStatement(
      {
        center: mostlyClosed,
        fulfillmentType: 'PICKUP',
        query: undefined,
        searchRadiusMeters: PICKUP_SEARCH_RADIUS_METERS,
        mode: 'live',
      },
      { limit: 20, offset: 0 },
    );
    const explained = await db.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      CompiledQuery.raw(`explain (analyze, format json) ${compiled.sql}`, [...compiled.parameters]),
    );
    const scans = nodesOf(explained.rows[0]!['QUERY PLAN'][0].Plan).filter(
      (node) => node['Relation Name'] === 'stores',
    );
    expect(scans).toContainEqual(
      expect.objectContaining({
        'Node Type': 'Index Only Scan',
        'Index Name': 'stores_location_covering',
        'Actual Rows': 6_000,
        'Heap Fetches': 0,
      }),
    );
    const rest = scans.filter((node) => node['Index Name'] !== 'stores_location_covering');
    expect(rest.reduce((rows, node) => rows + node['Actual Rows'] * node['Actual Loops'], 0)).toBe(
      20,
    );
  });
});

describe('discovery with a scheduledTime among 70,000 matching stores', () => {
  it('answers the first and the deepest page in the same order as without one', async () => {
    for (const offset of [0, 10_000]) {
      const page = { limit: 100, offset };
      const open = await scheduled(crowded, page);
      expect(open.stores).toHaveLength(100);
      // Every store is open, so the order is discovery's own: distance, ties by id (seven
      // stores share each distance, and batch boundaries fall inside such groups).
      const all = await discover({ location: crowded, fulfillmentType: 'PICKUP', ...page });
      expect(all.totalCount).toBe(70_000);
      expect(open.stores.map((store) => store.storeId)).toEqual(
        all.stores.map((store) => store.storeId),
      );
      // The scan stopped at the first open store after the page: more exist, and the count
      // is a lower bound that says so.
      expect(open.hasMore).toBe(true);
      expect(open.totalCount).toBeGreaterThan(offset + 100);
      expect(open.totalCount).toBeLessThanOrEqual(SCAN_CAP);
    }
  });

  it('reads bounded batches with a fixed number of parameters', async () => {
    await scheduled(crowded, { limit: 100, offset: 10_000 });
    expect(Math.max(...statements.rows)).toBeLessThanOrEqual(SCAN_BATCH_MAX);
    const rows = statements.rows.reduce((sum, count) => sum + count, 0);
    // The candidates examined (within the cap) and the page's whole rows.
    expect(rows).toBeLessThanOrEqual(SCAN_CAP + 100);
    // The search's own parameters (its mode one of them), however far the scan goes.
    expect(Math.max(...statements.parameters)).toBeLessThanOrEqual(21);
  });
});

describe('discovery with a scheduledTime where most stores are closed', () => {
  it('finds the open ones, nearest first, past thousands of closed and paused ones', async () => {
    const first = await scheduled(mostlyClosed, { limit: 100 });
    expect(seededNumbers(first.stores)).toEqual(
      Array.from({ length: 100 }, (_, index) => 4_010 + index * 10),
    );
    const distances = first.stores.map((store) => store.distanceMeters);
    expect(distances).toEqual([...distances].sort((a, b) => a - b));
    expect(first.hasMore).toBe(true);
    expect(first.totalCount).toBeGreaterThan(100);
  });

  it('counts exactly once the open stores run out: the last page, and past it', async () => {
    const last = await scheduled(mostlyClosed, { limit: 100, offset: 150 });
    expect(seededNumbers(last.stores)).toEqual(
      Array.from({ length: 50 }, (_, index) => 5_510 + index * 10),
    );
    expect(last).toMatchObject({ totalCount: 200, hasMore: false });
    const exactlyFull = await scheduled(mostlyClosed, { limit: 100, offset: 100 });
    expect(exactlyFull.stores).toHaveLength(100);
    expect(exactlyFull).toMatchObject({ totalCount: 200, hasMore: false });
    const past = await scheduled(mostlyClosed, { limit: 100, offset: 200 });
    expect(past).toEqual({ stores: [], totalCount: 200, hasMore: false });
  });

  it('examines at most the scan cap: open stores beyond it are outside the search', async () => {
    const result = await scheduled(closedNearest, { limit: 10 });
    expect(result).toEqual({ stores: [], totalCount: 0, hasMore: false });
    expect(statements.rows.reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(SCAN_CAP);
    // Narrowed by name to fewer candidates than the cap, the open ones are found.
    const named = await scheduled(closedNearest, { query: `Seeded ${SCAN_CAP + 1}` });
    expect(seededNumbers(named.stores)).toEqual([SCAN_CAP + 1]);
  });
});

describe('delivery discovery and the largest delivery radius', () => {
  const denver = { latitude: 39.74, longitude: -104.99 };
  const metersPerDegree = (Math.PI * 6_371_008.8) / 180;
  /** A delivery store `north` meters due north of Denver, delivering `radius` meters. */
  async function deliveryStore(name: string, north: number, radius: number) {
    const storeId = randomUUID();
    await sql`
      insert into stores (store_id, partner_id, name, phone, timezone, currency, address1, city,
        state, postal_code, country, latitude, longitude, fulfillment_types, availability,
        delivery_radius_meters, delivery_fee_minor, delivery_minimum_order_minor,
        delivery_eta_minutes, tax_rate_ppm, minimum_order_minor, status)
      values (${storeId}, gen_random_uuid(), ${name}, '+13035550100', 'America/Denver', 'USD',
        '1 Main St', 'Denver', 'CO', '80202', 'US', ${denver.latitude + north / metersPerDegree},
        ${denver.longitude}, array['DELIVERY_BY_MERCHANT'], '[]'::jsonb, ${radius}, 0, 0, 30, 0,
        0, 'online')
    `.execute(db);
    return storeId;
  }
  const delivering = async (location = denver) => {
    const found = await discover({ location, fulfillmentType: 'DELIVERY_BY_MERCHANT' });
    return { names: found.stores.map((store) => store.name), totalCount: found.totalCount };
  };

  it('searches with the radius it remembers, checked by the page statement itself', async () => {
    await deliveryStore('Near', 1_000, 20_000);
    expect(await delivering()).toEqual({ names: ['Near'], totalCount: 1 });
    statements.rows.length = 0;
    expect(await delivering()).toEqual({ names: ['Near'], totalCount: 1 });
    // One statement: no read of the largest radius of its own.
    expect(statements.rows).toEqual([1]);
  });

  it('answers as a fresh read of the radius would when it grows, shrinks or finds nothing', async () => {
    // 30 km north: outside the search box of the 20 km radius remembered so far (the largest
    // of any store: the sandbox fixtures deliver within 5 km).
    const far = await deliveryStore('Far', 30_000, 40_000);
    expect(await delivering()).toEqual({ names: ['Near', 'Far'], totalCount: 2 });
    await sql`update stores set delivery_radius_meters = 25000 where store_id = ${far}`.execute(db);
    expect(await delivering()).toEqual({ names: ['Near'], totalCount: 1 });
    const nowhere = { latitude: 39.74, longitude: -100 };
    expect(await delivering(nowhere)).toEqual({ names: [], totalCount: 0 });
    await sql`update stores set delivery_radius_meters = 35000 where store_id = ${far}`.execute(db);
    expect(await delivering(nowhere)).toEqual({ names: [], totalCount: 0 });
    expect(await delivering()).toEqual({ names: ['Near', 'Far'], totalCount: 2 });
  });
});

describe('request bounds', () => {
  it('refuses an offset past 10,000 at its pointer', async () => {
    const error = await expectAppError(
      discover({ location: mostlyClosed, fulfillmentType: 'PICKUP', offset: 10_001 }),
      'REQUEST_INVALID',
    );
    expect(error.errors?.[0]?.pointer).toBe('/offset');
  });

  it('refuses a delivery radius over 50,000 m', async () => {
    const profile = storeProfile();
    const error = await expectAppError(
      client.request(
        subjects.stores.upsert,
        {
          storeId: randomUUID(),
          profile: { ...profile, delivery: { ...profile.delivery!, radiusMeters: 50_001 } },
        },
        { requestId: randomUUID(), partnerId: randomUUID(), partnerKind: 'commerce', mode: 'live' },
      ),
      'REQUEST_INVALID',
    );
    expect(error.errors).toEqual([
      expect.objectContaining({ code: 'OUT_OF_RANGE', pointer: '/profile/delivery/radiusMeters' }),
    ]);
  });
});
