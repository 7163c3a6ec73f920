// `npm run bench:discovery`: store discovery (POST /v1/marketfront/stores/discover) through
// gateway → NATS → stores → Postgres with BENCH_STORES stores seeded around real US ZIP
// centroids, the platform's services running as separate processes on an isolated
// database, subject prefix and Redis key prefix. Open-loop load at fixed rates (requests
// evenly spaced, latency from each request's scheduled send time), a 200 req/s run where 10%
// of the bodies carry scheduledTime, and an unthrottled autocannon run for peak throughput.
// Checks the issue's target: p99 under 25 ms at 200 req/s. Then the dense city: BENCH_DENSE_STORES
// (1,000) more stores, every one offering pickup and delivery, spread evenly within
// BENCH_DENSE_RADIUS_KM (25) of one point (Chicago's Loop), discovered at and near that point at
// the same rates and unthrottled, and once with the largest page the contract allows: every
// pickup answer must count all of them and still hold one page (bounded, however many match).
// Options: BENCH_STORES=100000 BENCH_SECONDS=20 BENCH_PORT=18082 BENCH_CONNECTIONS=32
//          BENCH_DENSE_STORES=1000 BENCH_DENSE_RADIUS_KM=25 (BENCH_DENSE_STORES=0 skips it)
//          BENCH_KEEP=1 (keep the bench database and print its name, for EXPLAIN)
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
} from 'kysely';
import { BenchPlatform, Report } from './lib/bench-platform.mjs';
import { latencySummary, loadRow, pacedLoad, peakLoad, round2 } from './lib/paced-load.mjs';
import { cpuMeter, cpus } from './lib/process-cpu.mjs';
import { mulberry32 } from './lib/prng.mjs';
import { fail, log, root } from './lib/setup.mjs';

const storeCount = Number(process.env.BENCH_STORES ?? 100_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const port = Number(process.env.BENCH_PORT ?? 18082);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const keep = process.env.BENCH_KEEP === '1';
const denseCount = Number(process.env.BENCH_DENSE_STORES ?? 1_000);
const denseRadiusMeters = Number(process.env.BENCH_DENSE_RADIUS_KM ?? 25) * 1_000;
if (!Number.isInteger(storeCount) || storeCount < 1 || !(seconds > 0)) {
  fail(new Error('BENCH_STORES must be a positive integer and BENCH_SECONDS positive'));
}
if (!Number.isInteger(denseCount) || denseCount < 0 || !(denseRadiusMeters > 0)) {
  fail(new Error('BENCH_DENSE_STORES must be an integer >= 0 and BENCH_DENSE_RADIUS_KM positive'));
}
const RATES = [200, 400];
const TARGET_RATE = 200;
const TARGET_P99_MS = 25;
const LOCATIONS = 300;
const PAGE_LIMIT = 20;
/** Rows per multi-row INSERT (15 parameters a row, well under Postgres's 65535). */
const SEED_BATCH = 2_000;
const JITTER_METERS = 3_000;
const SCHEDULED_SHARE = 0.1;
/** The dense city's centre: Chicago's Loop (ZIP 60603). */
const DENSE_CENTER = { latitude: 41.8806, longitude: -87.6278 };
const DENSE_PLACE = { city: 'Chicago', state: 'IL', zip: '60603' };
/** Customers of the dense city: the centre itself and points up to this far from it. */
const DENSE_CUSTOMER_METERS = 2_000;
/** The contract's largest page (discoverStoresInput's limit). */
const MAX_PAGE_LIMIT = 100;

const platform = await BenchPlatform.create({ port, keepDatabase: keep });
const { EARTH_RADIUS_METERS } = await import(
  pathToFileURL(join(root, 'services/stores/dist/domain/geo.js')).href
);
const { discoveryPageQuery, nearestCandidatesQuery } = await import(
  pathToFileURL(join(root, 'services/stores/dist/db/store-discovery.repository.js')).href
);
const withCpu = cpuMeter(platform);
const platformCpu = ['gateway', 'stores', 'nats', 'postgres'];
/** The CPU columns of a withCpu result (the unthrottled rows: where the limit shows). */
const cpuColumns = (result) => ({
  'server CPU % (1 core = 100)': result.serverCpu,
  'bench CPU %': result.loadCpu,
  [`machine busy % (${cpus} cores)`]: result.machineBusy,
});
const zipcodes = createRequire(join(root, 'services/stores/package.json'))('zipcodes');

const zips = Object.values(zipcodes.codes)
  .filter(
    (z) =>
      z.country === 'US' &&
      Number.isFinite(z.latitude) &&
      Number.isFinite(z.longitude) &&
      !(z.latitude === 0 && z.longitude === 0),
  )
  .sort((a, b) => (a.zip < b.zip ? -1 : a.zip > b.zip ? 1 : 0));

/** Rough US time zone by longitude (good enough for a benchmark's opening hours). */
function timezoneAt(longitude) {
  if (longitude < -115) return 'America/Los_Angeles';
  if (longitude < -102) return 'America/Denver';
  if (longitude < -87) return 'America/Chicago';
  return 'America/New_York';
}

const METERS_PER_DEGREE = (Math.PI * EARTH_RADIUS_METERS) / 180;
const AVAILABILITY = JSON.stringify(
  ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'].map(
    (dayOfWeek) => ({ dayOfWeek, start: '08:00:00', end: '22:00:00' }),
  ),
);
const STREETS = ['Main St', 'Oak Ave', 'Maple Dr', 'Broadway', 'Market St', 'Park Ave', 'Elm St'];

/** A point `dNorth` and `dEast` meters from `from`. */
function offset(from, dNorth, dEast) {
  const cosLat = Math.max(0.01, Math.cos((from.latitude * Math.PI) / 180));
  return {
    latitude: Math.max(-90, Math.min(90, from.latitude + dNorth / METERS_PER_DEGREE)),
    longitude: Math.max(-180, Math.min(180, from.longitude + dEast / (METERS_PER_DEGREE * cosLat))),
  };
}

/** A point uniformly distributed over the disc of `radius` meters around `center`. */
function pointInDisc(random, center, radius) {
  const distance = radius * Math.sqrt(random());
  const angle = 2 * Math.PI * random();
  return offset(center, distance * Math.cos(angle), distance * Math.sin(angle));
}

/** A store near a random ZIP centroid (±JITTER_METERS), with a mix of fulfillment types. */
function zipStoreValues(random, index) {
  const zip = zips[Math.floor(random() * zips.length)];
  const { latitude, longitude } = offset(
    zip,
    (random() * 2 - 1) * JITTER_METERS,
    (random() * 2 - 1) * JITTER_METERS,
  );
  const mix = random();
  const types =
    mix < 0.4
      ? ['PICKUP', 'DELIVERY_BY_MERCHANT']
      : mix < 0.7
        ? ['PICKUP']
        : ['DELIVERY_BY_MERCHANT'];
  return storeValues(random, `Store ${index + 1}`, zip, { latitude, longitude }, types);
}

/** A dense-city store: anywhere within denseRadiusMeters of the centre, both fulfillment types. */
function denseStoreValues(random, index) {
  const location = pointInDisc(random, DENSE_CENTER, denseRadiusMeters);
  return storeValues(random, `Dense Store ${index + 1}`, DENSE_PLACE, location, [
    'PICKUP',
    'DELIVERY_BY_MERCHANT',
  ]);
}

/** One seeded store's per-row values, in the column order of the INSERT below. */
function storeValues(random, name, place, { latitude, longitude }, types) {
  const delivers = types.includes('DELIVERY_BY_MERCHANT');
  const pickup = types.includes('PICKUP');
  return [
    randomUUID(),
    name,
    timezoneAt(longitude),
    `${1 + Math.floor(random() * 9_000)} ${STREETS[Math.floor(random() * STREETS.length)]}`,
    place.city,
    place.state,
    place.zip,
    latitude,
    longitude,
    types,
    delivers ? 3_000 + Math.floor(random() * 5_001) : null,
    delivers ? [0, 199, 299, 399, 499][Math.floor(random() * 5)] : null,
    delivers ? [0, 1_000, 1_500, 2_000][Math.floor(random() * 4)] : null,
    delivers ? 25 + Math.floor(random() * 36) : null,
    pickup ? 10 + Math.floor(random() * 21) : null,
  ];
}

/**
 * Seed `count` stores (each row's values from `valuesOf(random, index)`) straight into the
 * stores schema with multi-row INSERTs. Shared constants are parameters $1..$2 referenced by
 * every row. Then VACUUM (ANALYZE), as autovacuum does after a table takes that many
 * inserts: discovery's index-only scans need the visibility map it sets, and would read the
 * heap straight after a bulk load. Resolves the number of stores in the table afterwards.
 */
async function seedStores(partnerId, count, valuesOf = zipStoreValues, seed = 0x5eed) {
  const client = await platform.connectDatabase({ options: '-c search_path=stores' });
  try {
    const random = mulberry32(seed);
    const shared = 2;
    const perRow = 15;
    for (let start = 0; start < count; start += SEED_BATCH) {
      const size = Math.min(SEED_BATCH, count - start);
      const params = [partnerId, AVAILABILITY];
      const tuples = [];
      for (let i = 0; i < size; i++) {
        const values = valuesOf(random, start + i);
        const p = (k) => `$${shared + i * perRow + k}`;
        tuples.push(
          `(${p(1)}, $1, ${p(2)}, '+13125550100', ${p(3)}, 'USD', ${p(4)}, ${p(5)}, ${p(6)}, ` +
            `${p(7)}, 'US', ${p(8)}, ${p(9)}, ${p(10)}::text[], $2::jsonb, ${p(11)}, ${p(12)}, ` +
            `${p(13)}, ${p(14)}, ${p(15)}, 87500, 0, 'online')`,
        );
        params.push(...values);
      }
      await client.query(
        `insert into stores (store_id, partner_id, name, phone, timezone, currency, address1,
           city, state, postal_code, country, latitude, longitude, fulfillment_types,
           availability, delivery_radius_meters, delivery_fee_minor,
           delivery_minimum_order_minor, delivery_eta_minutes, pickup_eta_minutes,
           tax_rate_ppm, minimum_order_minor, status)
         values ${tuples.join(',\n')}`,
        params,
      );
    }
    const vacuumStarted = performance.now();
    await client.query('vacuum (analyze) stores');
    const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
    const { rows } = await client.query('select count(*)::int as n from stores');
    return { stored: rows[0].n, vacuumSeconds };
  } finally {
    await client.end();
  }
}

/** Customer locations: random ZIP centroids (a different stream from the seeding one). */
function customerLocations(count) {
  const random = mulberry32(0xc0ffee);
  return Array.from({ length: count }, () => {
    const zip = zips[Math.floor(random() * zips.length)];
    return { latitude: zip.latitude, longitude: zip.longitude };
  });
}

/** Tomorrow 20:00 UTC: inside 08:00–22:00 in every continental US time zone. */
function scheduledInstant() {
  const at = new Date();
  at.setUTCDate(at.getUTCDate() + 1);
  at.setUTCHours(20, 0, 0, 0);
  return at.toISOString();
}

/** Request bodies rotating over the locations, alternating PICKUP / DELIVERY_BY_MERCHANT. */
function requestBodies(locations, { scheduledShare = 0, limit = PAGE_LIMIT } = {}) {
  const random = mulberry32(0xb0d1e5);
  const scheduledTime = scheduledInstant();
  return locations.map((location, i) => {
    const scheduled = random() < scheduledShare;
    const body = {
      location,
      fulfillmentType: i % 2 === 0 ? 'PICKUP' : 'DELIVERY_BY_MERCHANT',
      limit,
      ...(scheduled ? { scheduledTime } : {}),
    };
    return { kind: scheduled ? 'scheduled' : 'asap', payload: Buffer.from(JSON.stringify(body)) };
  });
}

/** Latency and response figures of some of a run's samples (see pacedDiscover). */
function summarize(samples, achievedRate = '') {
  const ok = samples.filter((s) => s.stores !== undefined);
  const mean = (values) =>
    values.length ? round2(values.reduce((a, b) => a + b, 0) / values.length) : NaN;
  return {
    requests: samples.length,
    achievedRate,
    ...latencySummary(samples.map((s) => s.latency)),
    non2xx: samples.filter((s) => s.status !== undefined && (s.status < 200 || s.status >= 300))
      .length,
    errors: samples.filter((s) => s.status === undefined).length,
    avgStores: mean(ok.map((s) => s.stores)),
    avgTotalCount: mean(ok.map((s) => s.totalCount)),
  };
}

let firstFailure;

/**
 * Paced load with rotating bodies, keeping a sample per request (its body's kind and index,
 * latency, status and the stores it found) to summarize by kind and fulfillment type.
 */
async function pacedDiscover({ target, bodies, rate, seconds: duration }) {
  const samples = [];
  const result = await pacedLoad({
    ...target,
    bodies: bodies.map((b) => b.payload),
    rate,
    seconds: duration,
    onResult: ({ index: sent, latency, status, body }) => {
      const index = sent % bodies.length;
      const sample = { kind: bodies[index].kind, index, latency, status };
      if (status >= 200 && status < 300) {
        try {
          const found = JSON.parse(body);
          sample.stores = found.stores.length;
          sample.totalCount = found.totalCount;
          sample.hasMore = found.hasMore;
          sample.bytes = Buffer.byteLength(body);
        } catch {
          // counted in the latency table; the averages skip it
        }
      }
      samples.push(sample);
    },
  });
  firstFailure ??= result.firstFailure;
  return { samples, achievedRate: result.achievedRate };
}

function row(label, rate, s) {
  return {
    run: label,
    ...loadRow(rate, s),
    'avg stores': s.avgStores,
    'avg totalCount': s.avgTotalCount,
  };
}

/** Compiles the stores service's own discovery queries without a connection, for EXPLAIN. */
const compiler = new Kysely({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** The discovery query of the stores service for `limit` stores, or its walk's batch. */
function discoveryQuery(center, fulfillmentType, searchRadiusMeters, limit, walk = false) {
  const q = { center, fulfillmentType, query: undefined, searchRadiusMeters };
  return walk
    ? nearestCandidatesQuery(compiler, q, { after: undefined, limit }).compile()
    : discoveryPageQuery(compiler, q, { limit, offset: 0 }).compile();
}

async function explainDiscovery(center) {
  const client = await platform.connectDatabase({ options: '-c search_path=stores' });
  try {
    const explain = async (title, { sql, parameters = [] }) => {
      const { rows } = await client.query(`explain (analyze, buffers) ${sql}`, parameters);
      process.stdout.write(`\n-- ${title}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}\n`);
    };
    const radius = (await client.query('select max(delivery_radius_meters) as r from stores'))
      .rows[0].r;
    process.stdout.write(
      `\nEXPLAIN (ANALYZE, BUFFERS) at ${center.latitude}, ${center.longitude}` +
        ` (max delivery radius ${radius} m)\n`,
    );
    await explain('maxDeliveryRadius', {
      sql: 'select max(delivery_radius_meters) as radius from stores',
    });
    await explain('PICKUP, limit 20', discoveryQuery(center, 'PICKUP', 50_000, PAGE_LIMIT));
    await explain(
      'DELIVERY_BY_MERCHANT, limit 20',
      discoveryQuery(center, 'DELIVERY_BY_MERCHANT', radius, PAGE_LIMIT),
    );
    await explain(
      'PICKUP, the nearest 5,000 (the largest batch of the scheduledTime walk)',
      discoveryQuery(center, 'PICKUP', 50_000, 5_000, true),
    );
  } finally {
    await client.end();
  }
}

/**
 * What is wrong with the dense city's answers: a page longer than its limit or than the
 * stores matching, `hasMore` disagreeing with them, or a pickup answer not counting every
 * dense store (all are within the pickup radius of every customer point).
 */
function pageProblems(samples, limit) {
  const problems = [];
  for (const s of samples) {
    if (s.stores === undefined) continue; // a failed request: counted in the table
    const pickup = s.index % 2 === 0;
    const expected = Math.min(limit, s.totalCount);
    if (s.stores !== expected) {
      problems.push(`a page of ${s.stores} stores (limit ${limit}, totalCount ${s.totalCount})`);
    }
    if (s.hasMore !== s.totalCount > s.stores) {
      problems.push(`hasMore ${s.hasMore} with ${s.stores} of ${s.totalCount} stores`);
    }
    if (pickup && s.totalCount < denseCount) {
      problems.push(`a pickup answer counting ${s.totalCount} stores, fewer than ${denseCount}`);
    }
  }
  return problems;
}

/**
 * The dense city: seed denseCount stores within denseRadiusMeters of DENSE_CENTER, then
 * discover at and near it (paced at RATES, unthrottled, and paced with the largest page),
 * checking every answer's page. Adds its table; resolves its verdict lines.
 */
async function denseCity(partnerId, target) {
  const radiusKm = round2(denseRadiusMeters / 1_000);
  log(`dense city: seeding ${denseCount} stores within ${radiusKm} km of Chicago's Loop`);
  const { stored } = await seedStores(partnerId, denseCount, denseStoreValues, 0xc17e);
  if (stored !== storeCount + denseCount) {
    throw new Error(`seeded ${stored} stores in all, expected ${storeCount + denseCount}`);
  }
  const random = mulberry32(0xd3a5e);
  const customers = [
    DENSE_CENTER,
    ...Array.from({ length: LOCATIONS - 1 }, () =>
      pointInDisc(random, DENSE_CENTER, DENSE_CUSTOMER_METERS),
    ),
  ];
  const bodies = requestBodies(customers);
  const rows = [];
  const problems = [];
  const denseRow = (label, rate, samples, summary) => ({
    ...row(label, rate, summary),
    'max response KB': round2(Math.max(0, ...samples.map((s) => s.bytes ?? 0)) / 1024),
  });
  let targetP99;
  for (const rate of RATES) {
    log(`dense city: ${rate} req/s for ${seconds} s`);
    const { samples, achievedRate } = await pacedDiscover({ target, bodies, rate, seconds });
    problems.push(...pageProblems(samples, PAGE_LIMIT));
    const all = summarize(samples, achievedRate);
    if (rate === TARGET_RATE) targetP99 = all.p99;
    rows.push(denseRow('dense: mixed PICKUP/DELIVERY', rate, samples, all));
    const pickup = samples.filter((s) => s.index % 2 === 0);
    rows.push(denseRow('  PICKUP only', rate, pickup, summarize(pickup)));
  }
  log(`dense city: unthrottled for ${seconds} s with ${connections} connections`);
  const peak = await withCpu(platformCpu, () =>
    peakLoad({
      ...target,
      bodies: bodies.map((b) => b.payload),
      connections,
      seconds,
    }),
  );
  rows.push({
    ...row(`dense: unthrottled (${connections} connections)`, 'max', {
      ...peak,
      avgStores: '',
      avgTotalCount: '',
    }),
    ...cpuColumns(peak),
  });
  log(`dense city: ${TARGET_RATE} req/s for ${seconds} s with limit ${MAX_PAGE_LIMIT}`);
  const largest = await pacedDiscover({
    target,
    bodies: requestBodies(customers, { limit: MAX_PAGE_LIMIT }),
    rate: TARGET_RATE,
    seconds,
  });
  problems.push(...pageProblems(largest.samples, MAX_PAGE_LIMIT));
  rows.push(
    denseRow(
      `dense: limit ${MAX_PAGE_LIMIT} (the largest page)`,
      TARGET_RATE,
      largest.samples,
      summarize(largest.samples, largest.achievedRate),
    ),
  );
  report.table(
    `Dense city: ${denseCount} more stores (pickup and delivery) within ${radiusKm} km of ` +
      `Chicago's Loop, discovered at it and up to ${DENSE_CUSTOMER_METERS / 1_000} km from it ` +
      `(limit ${PAGE_LIMIT} unless noted), ${stored} stores in all`,
    rows,
  );
  const verdicts = [
    `dense city (${denseCount} stores within ${radiusKm} km) p99 < ${TARGET_P99_MS} ms at ` +
      `${TARGET_RATE} req/s: ${targetP99 < TARGET_P99_MS ? 'met' : 'not met'} (p99 = ${targetP99} ms); ` +
      `peak ${peak.achievedRate} req/s`,
    `dense city pages bounded (each answer one page of at most its limit, pickup counting all ` +
      `${denseCount}): ${problems.length === 0 ? 'OK' : `FAILED (${problems.length} answers)`}`,
    ...problems.slice(0, 5).map((problem) => `  ${problem}`),
  ];
  if (problems.length > 0) process.exitCode = 1;
  return { verdicts };
}

const report = new Report();

await platform.run(
  async () => {
    const { commerce, distribution } = platform.createPartners();
    // 1,000,000 a minute is the CLI's ceiling.
    platform.setRateLimits(distribution, { discovery: 1_000_000 });

    const url = platform.url('/v1/marketfront/stores/discover');
    const headers = { authorization: `Bearer ${distribution.apiKey}` };
    const target = { url, method: 'POST', headers };
    const locations = customerLocations(LOCATIONS);
    // The platform is ready once every service's ops port says so, which the stores service
    // does only after migrating its schema: the table is there to seed.
    log(`seeding ${storeCount} stores around ${zips.length} US ZIP centroids (±3 km)`);
    const seedStarted = performance.now();
    const { stored, vacuumSeconds } = await seedStores(commerce.partnerId, storeCount);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    if (stored !== storeCount) throw new Error(`seeded ${stored} stores, expected ${storeCount}`);
    const seeding = {
      stores: stored,
      'seconds (incl. VACUUM)': round2(seedSeconds),
      'VACUUM (ANALYZE) s': round2(vacuumSeconds),
      'rows/s': Math.round(stored / seedSeconds),
    };
    log(`seeded in ${seeding['seconds (incl. VACUUM)']} s`);
    report.table('Seeding (multi-row INSERT via pg, then VACUUM (ANALYZE))', [seeding]);

    // One discovery per fulfillment type before any load: a failing endpoint is an error, but
    // first show what the database side of discovery costs (EXPLAIN of the repository's SQL).
    for (const fulfillmentType of ['PICKUP', 'DELIVERY_BY_MERCHANT']) {
      const probe = await fetch(url, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ location: locations[0], fulfillmentType, limit: PAGE_LIMIT }),
      }).then(
        async (r) => ({ ok: r.ok, text: `${r.status} ${await r.text()}` }),
        (error) => ({ ok: false, text: String(error) }),
      );
      if (!probe.ok) {
        report.print();
        // A sampled location, and Midtown Manhattan (ZIP 10001) as a dense one.
        for (const center of [locations[0], { latitude: 40.7484, longitude: -73.9967 }]) {
          await explainDiscovery(center).catch((error) =>
            process.stderr.write(`EXPLAIN failed: ${error.stack ?? error}\n`),
          );
        }
        throw new Error(`POST ${url} (${fulfillmentType}) failed: ${probe.text.slice(0, 1000)}`);
      }
    }

    const asapBodies = requestBodies(locations);
    log('warming up: 100 req/s for 5 s');
    await pacedDiscover({ target, bodies: asapBodies, rate: 100, seconds: 5 });

    const rows = [];
    let targetP99;
    /** Largest totalCount seen per location (for EXPLAIN at the densest one). */
    const densest = { totalCount: -1, index: 0 };
    for (const rate of RATES) {
      log(`${rate} req/s for ${seconds} s (open loop, evenly spaced)`);
      const { samples, achievedRate } = await pacedDiscover({
        target,
        bodies: asapBodies,
        rate,
        seconds,
      });
      const all = summarize(samples, achievedRate);
      for (const s of samples) {
        if (s.index % 2 === 0 && s.totalCount > densest.totalCount) {
          Object.assign(densest, { totalCount: s.totalCount, index: s.index });
        }
      }
      if (rate === TARGET_RATE) targetP99 = all.p99;
      rows.push(row('mixed PICKUP/DELIVERY', rate, all));
      for (const type of ['PICKUP', 'DELIVERY_BY_MERCHANT']) {
        const subset = samples.filter((s) => s.index % 2 === (type === 'PICKUP' ? 0 : 1));
        rows.push(row(`  ${type} only`, rate, summarize(subset)));
      }
    }

    log(`unthrottled for ${seconds} s with ${connections} connections (peak throughput)`);
    const peak = await withCpu(platformCpu, () =>
      peakLoad({
        ...target,
        bodies: asapBodies.map((b) => b.payload),
        connections,
        seconds,
      }),
    );
    rows.push({
      ...row(`unthrottled (${connections} connections)`, 'max', {
        ...peak,
        avgStores: '',
        avgTotalCount: '',
      }),
      ...cpuColumns(peak),
    });
    report.table(
      `POST /v1/marketfront/stores/discover (limit ${PAGE_LIMIT}, no scheduledTime) over ` +
        `${LOCATIONS} ZIP-centroid locations, ${stored} stores: gateway → NATS → stores → Postgres`,
      rows,
    );

    log(`${TARGET_RATE} req/s for ${seconds} s with scheduledTime in ~10% of the bodies`);
    const mixedBodies = requestBodies(locations, { scheduledShare: SCHEDULED_SHARE });
    const { samples, achievedRate } = await pacedDiscover({
      target,
      bodies: mixedBodies,
      rate: TARGET_RATE,
      seconds,
    });
    const scheduledSummary = summarize(samples.filter((s) => s.kind === 'scheduled'));
    report.table(
      `SEPARATE RUN at ${TARGET_RATE} req/s: ${Math.round(SCHEDULED_SHARE * 100)}% of bodies ` +
        `carry scheduledTime (${scheduledInstant()}); the rest are as above`,
      [
        row('all requests', TARGET_RATE, summarize(samples, achievedRate)),
        row('  scheduledTime requests', '', scheduledSummary),
        row('  without scheduledTime', '', summarize(samples.filter((s) => s.kind === 'asap'))),
      ],
    );

    const dense = denseCount > 0 ? await denseCity(commerce.partnerId, target) : undefined;

    const met = targetP99 < TARGET_P99_MS;
    report.verdicts = [
      `target p99 < ${TARGET_P99_MS} ms at ${TARGET_RATE} req/s: ${met ? 'met' : 'not met'} ` +
        `(p99 = ${targetP99} ms)`,
      `scheduledTime requests (10% sample, separate run) p99 < ${TARGET_P99_MS} ms: ` +
        `${scheduledSummary.p99 < TARGET_P99_MS ? 'met' : 'not met'} (p99 = ${scheduledSummary.p99} ms)`,
      ...(dense?.verdicts ?? []),
    ];
    if (firstFailure) log(`first failed response: ${firstFailure}`);
    report.print();
    if (!met || scheduledSummary.p99 >= TARGET_P99_MS || process.env.BENCH_EXPLAIN === '1') {
      // The request location with the most pickup matches, where the box holds the most stores.
      log(`EXPLAIN at the densest location (pickup totalCount ${densest.totalCount})`);
      await explainDiscovery(locations[densest.index]);
    }
  },
  () => {
    report.print();
    if (firstFailure) log(`first failed response: ${firstFailure}`);
  },
);
if (keep) {
  log(
    `BENCH_KEEP=1: kept database ${platform.database} (${platform.databaseUrl}); ` +
      'tables in schema "stores"',
  );
  log(`drop it with: DROP DATABASE ${platform.database} WITH (FORCE)`);
}
