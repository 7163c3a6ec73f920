import { subjects } from '@pcp/contracts';
import {
  createBusClient,
  createDatabase,
  type BusClient,
  type ServiceInstance,
} from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestEnvironment,
  type TestEnvironment,
} from '../../../../test-support/environment.js';
import { expectAppError, storeProfile } from '../../../../test-support/fixtures.js';
import { createStoresService, STORES_SCHEMA, type StoresDatabase } from '../../src/app.js';
import { MAX_SCHEDULED_CANDIDATES } from '../../src/handlers/discovery.handlers.js';

let env: TestEnvironment;
let db: Kysely<StoresDatabase>;
let service: ServiceInstance;
let client: BusClient;

/** Tuesday 2026-11-24, 18:00 UTC (noon in Chicago). */
const tuesdayNoon = '2026-11-24T18:00:00.000Z';
const crowded = { latitude: 41.88, longitude: -87.63 };
const sparse = { latitude: 44.98, longitude: -93.27 };
const distribution = () => ({
  requestId: randomUUID(),
  partnerId: randomUUID(),
  partnerKind: 'distribution' as const,
});

/**
 * `count` stores spread within about 3 km of `center`, inserted by one statement; the
 * `open` of them (the nearest, every `openEvery`-th) are open all Tuesday, the rest never.
 */
async function seed(center: typeof crowded, count: number, openEvery: number) {
  const always = JSON.stringify([{ dayOfWeek: 'Tuesday', start: '00:00:00', end: '00:00:00' }]);
  await sql`
    insert into stores (store_id, partner_id, name, phone, timezone, currency, address1, city,
      state, postal_code, country, latitude, longitude, fulfillment_types, availability,
      pickup_eta_minutes, tax_rate_ppm, minimum_order_minor, status)
    select gen_random_uuid(), gen_random_uuid(), 'Seeded ' || n, '+13125550100',
      'America/Chicago', 'USD', '1 Main St', 'Chicago', 'IL', '60601', 'US',
      ${center.latitude} + n * 0.0000004, ${center.longitude}, array['PICKUP'],
      case when n % ${openEvery} = 0 then ${always}::jsonb else '[]'::jsonb end,
      15, 0, 0, 'online'
    from generate_series(1, ${count}) as n
  `.execute(db);
}

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<StoresDatabase>({
    url: env.databaseUrl,
    schema: STORES_SCHEMA,
    applicationName: 'test',
  });
  service = createStoresService({
    nc: env.nc,
    logger: env.logger,
    metrics: env.newMetrics('stores'),
    subjectPrefix: env.prefix,
    requestTimeoutMs: 20_000,
    db,
  });
  await service.start();
  client = createBusClient(env.nc, { prefix: env.prefix, timeoutMs: 20_000, logger: env.logger });
  // Every store open around the crowded point; one in ten open around the sparse one.
  await seed(crowded, 70_000, 1);
  await seed(sparse, 3_000, 10);
  await sql`analyze stores`.execute(db);
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await db?.destroy();
  await env?.cleanup();
});

describe('discovery with a scheduledTime', () => {
  it('examines a bounded number of the nearest stores, however many match (70,000 here)', async () => {
    const result = await client.request(
      subjects.stores.discover,
      { location: crowded, fulfillmentType: 'PICKUP', scheduledTime: tuesdayNoon, limit: 100 },
      distribution(),
    );
    expect(result.stores).toHaveLength(100);
    expect(result.totalCount).toBe(MAX_SCHEDULED_CANDIDATES);
    expect(result.hasMore).toBe(true);
    const distances = result.stores.map((store) => store.distanceMeters);
    expect(distances).toEqual([...distances].sort((a, b) => a - b));

    // The deepest page the contract allows is served too.
    const deep = await client.request(
      subjects.stores.discover,
      {
        location: crowded,
        fulfillmentType: 'PICKUP',
        scheduledTime: tuesdayNoon,
        limit: 100,
        offset: 10_000,
      },
      distribution(),
    );
    expect(deep.stores).toHaveLength(100);
    expect(deep.stores[0]!.distanceMeters).toBeGreaterThanOrEqual(distances.at(-1)!);
  });

  it('finds the open stores among mostly closed ones, nearest first, and counts them', async () => {
    const result = await client.request(
      subjects.stores.discover,
      { location: sparse, fulfillmentType: 'PICKUP', scheduledTime: tuesdayNoon, limit: 100 },
      distribution(),
    );
    expect(result.totalCount).toBe(300);
    expect(result.hasMore).toBe(true);
    expect(result.stores).toHaveLength(100);
    expect(result.stores.every((store) => store.name.startsWith('Seeded '))).toBe(true);
    expect(result.stores.map((store) => Number(store.name.slice(7)) % 10)).toEqual(
      Array.from({ length: 100 }, () => 0),
    );
    const last = await client.request(
      subjects.stores.discover,
      {
        location: sparse,
        fulfillmentType: 'PICKUP',
        scheduledTime: tuesdayNoon,
        limit: 100,
        offset: 200,
      },
      distribution(),
    );
    expect(last).toMatchObject({ totalCount: 300, hasMore: false });
    expect(last.stores).toHaveLength(100);
  });

  it('refuses an offset past 10,000 at its pointer', async () => {
    const error = await expectAppError(
      client.request(
        subjects.stores.discover,
        { location: sparse, fulfillmentType: 'PICKUP', offset: 10_001 },
        distribution(),
      ),
      'REQUEST_INVALID',
    );
    expect(error.errors?.[0]?.pointer).toBe('/offset');
  });
});

describe('delivery radius', () => {
  it('is at most 50,000 m', async () => {
    const profile = storeProfile();
    const error = await expectAppError(
      client.request(
        subjects.stores.upsert,
        {
          storeId: randomUUID(),
          profile: { ...profile, delivery: { ...profile.delivery!, radiusMeters: 50_001 } },
        },
        { requestId: randomUUID(), partnerId: randomUUID(), partnerKind: 'commerce' },
      ),
      'REQUEST_INVALID',
    );
    expect(error.errors).toEqual([
      expect.objectContaining({ code: 'OUT_OF_RANGE', pointer: '/profile/delivery/radiusMeters' }),
    ]);
  });
});
