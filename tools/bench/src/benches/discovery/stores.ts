// The discovery bench's stores, seeded straight into the stores schema: around real US ZIP
// centroids, or the dense city's, within a radius of one point.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { mulberry32 } from '@pcp/testing/prng';
import { EARTH_RADIUS_METERS } from '@pcp/contracts';
import type { BenchPlatform } from '../../platform/bench-platform.js';

export interface Coordinates {
  latitude: number;
  longitude: number;
}

interface Zip extends Coordinates {
  zip: string;
  city: string;
  state: string;
  country: string;
}

/** Rows per multi-row INSERT (15 parameters a row, well under Postgres's 65535). */
const SEED_BATCH = 2_000;
const JITTER_METERS = 3_000;
const METERS_PER_DEGREE = (Math.PI * EARTH_RADIUS_METERS) / 180;
const AVAILABILITY = JSON.stringify(
  ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'].map(
    (dayOfWeek) => ({ dayOfWeek, start: '08:00:00', end: '22:00:00' }),
  ),
);
const STREETS = ['Main St', 'Oak Ave', 'Maple Dr', 'Broadway', 'Market St', 'Park Ave', 'Elm St'];

const zipcodes = createRequire(import.meta.url)('zipcodes') as { codes: Record<string, Zip> };
export const zips = Object.values(zipcodes.codes)
  .filter(
    (z) =>
      z.country === 'US' &&
      Number.isFinite(z.latitude) &&
      Number.isFinite(z.longitude) &&
      !(z.latitude === 0 && z.longitude === 0),
  )
  .sort((a, b) => (a.zip < b.zip ? -1 : a.zip > b.zip ? 1 : 0));

type Random = () => number;
const pick = <T>(random: Random, values: readonly T[]): T =>
  values[Math.floor(random() * values.length)]!;

/** Rough US time zone by longitude (good enough for a benchmark's opening hours). */
function timezoneAt(longitude: number): string {
  if (longitude < -115) return 'America/Los_Angeles';
  if (longitude < -102) return 'America/Denver';
  if (longitude < -87) return 'America/Chicago';
  return 'America/New_York';
}

/** A point `dNorth` and `dEast` meters from `from`. */
function offset(from: Coordinates, dNorth: number, dEast: number): Coordinates {
  const cosLat = Math.max(0.01, Math.cos((from.latitude * Math.PI) / 180));
  return {
    latitude: Math.max(-90, Math.min(90, from.latitude + dNorth / METERS_PER_DEGREE)),
    longitude: Math.max(-180, Math.min(180, from.longitude + dEast / (METERS_PER_DEGREE * cosLat))),
  };
}

/** A point uniformly distributed over the disc of `radius` meters around `center`. */
export function pointInDisc(random: Random, center: Coordinates, radius: number): Coordinates {
  const distance = radius * Math.sqrt(random());
  const angle = 2 * Math.PI * random();
  return offset(center, distance * Math.cos(angle), distance * Math.sin(angle));
}

export type StoreValues = (random: Random, index: number) => unknown[];

/** A store near a random ZIP centroid (±JITTER_METERS), with a mix of fulfillment types. */
export const zipStoreValues: StoreValues = (random, index) => {
  const zip = pick(random, zips);
  const location = offset(
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
  return storeValues(random, `Store ${index + 1}`, zip, location, types);
};

/** Stores anywhere within `radius` meters of `center`, both fulfillment types. */
export const denseStoreValues =
  (
    center: Coordinates,
    place: { city: string; state: string; zip: string },
    radius: number,
  ): StoreValues =>
  (random, index) =>
    storeValues(random, `Dense Store ${index + 1}`, place, pointInDisc(random, center, radius), [
      'PICKUP',
      'DELIVERY_BY_MERCHANT',
    ]);

/** One seeded store's per-row values, in the column order of the INSERT below. */
function storeValues(
  random: Random,
  name: string,
  place: { city: string; state: string; zip: string },
  { latitude, longitude }: Coordinates,
  types: string[],
): unknown[] {
  const delivers = types.includes('DELIVERY_BY_MERCHANT');
  const pickup = types.includes('PICKUP');
  return [
    randomUUID(),
    name,
    timezoneAt(longitude),
    `${1 + Math.floor(random() * 9_000)} ${pick(random, STREETS)}`,
    place.city,
    place.state,
    place.zip,
    latitude,
    longitude,
    types,
    delivers ? 3_000 + Math.floor(random() * 5_001) : null,
    delivers ? pick(random, [0, 199, 299, 399, 499]) : null,
    delivers ? pick(random, [0, 1_000, 1_500, 2_000]) : null,
    delivers ? 25 + Math.floor(random() * 36) : null,
    pickup ? 10 + Math.floor(random() * 21) : null,
  ];
}

/**
 * Seed `count` stores (each row's values from `valuesOf(random, index)`) with multi-row
 * INSERTs; shared constants are parameters $1..$2 referenced by every row. Then VACUUM
 * (ANALYZE), as autovacuum does after a table takes that many inserts: discovery's
 * index-only scans need the visibility map it sets; and a CHECKPOINT. Resolves the stores in
 * the table after.
 */
export async function seedStores(
  platform: BenchPlatform,
  partnerId: string,
  count: number,
  valuesOf: StoreValues = zipStoreValues,
  seed = 0x5eed,
): Promise<{ stored: number; vacuumSeconds: number }> {
  const client = await platform.connectDatabase({ options: '-c search_path=stores' });
  try {
    const random = mulberry32(seed);
    const shared = 2;
    const perRow = 15;
    for (let start = 0; start < count; start += SEED_BATCH) {
      const size = Math.min(SEED_BATCH, count - start);
      const params: unknown[] = [partnerId, AVAILABILITY];
      const tuples = [];
      for (let i = 0; i < size; i++) {
        const values = valuesOf(random, start + i);
        const p = (k: number) => `$${shared + i * perRow + k}`;
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
    // And write the load out: a deployment's stores were checkpointed long before, whereas the
    // timed checkpoint after a fresh seed writes ~100 MB while the paced runs measure.
    await client.query('checkpoint');
    const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
    // This partner's only: the platform seeds its own sandbox fixture stores too.
    const { rows } = await client.query<{ n: number }>(
      'select count(*)::int as n from stores where partner_id = $1',
      [partnerId],
    );
    return { stored: rows[0]!.n, vacuumSeconds };
  } finally {
    await client.end();
  }
}

/** Customer locations: random ZIP centroids (a different stream from the seeding one). */
export function customerLocations(count: number): Coordinates[] {
  const random = mulberry32(0xc0ffee);
  return Array.from({ length: count }, () => {
    const zip = pick(random, zips);
    return { latitude: zip.latitude, longitude: zip.longitude };
  });
}
