import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { STORES_SCHEMA, storesMigrations, type StoresDatabase } from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<StoresDatabase>;

/** The last migration before item availability and store events. */
const BEFORE_ITEM_AVAILABILITY = '2026-12-02T0100-seal-submission-secrets';

async function migrateTo(name: string) {
  const migrator = new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: STORES_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(storesMigrations) },
  });
  const { error } = await migrator.migrateTo(name);
  expect(error).toBeUndefined();
}

const tableExists = async (table: string) =>
  (await sql<{ found: string | null }>`select to_regclass(${table}) as found`.execute(db)).rows[0]
    ?.found != null;

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<StoresDatabase>({
    url: env.databaseUrl,
    schema: STORES_SCHEMA,
    applicationName: 'test',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('the item availability and store events migration', () => {
  it('gives saved stores version 0 of both sequences, keeps overrides to real stores, and reverts', async () => {
    await migrateTo(BEFORE_ITEM_AVAILABILITY);
    expect(await tableExists('item_availability_overrides')).toBe(false);
    const storeId = randomUUID();
    await sql`
      insert into stores (store_id, partner_id, name, phone, timezone, currency, address1, city,
        state, postal_code, country, latitude, longitude, fulfillment_types, availability,
        tax_rate_ppm, minimum_order_minor, status)
      values (${storeId}, ${randomUUID()}, 'Saved before', '+13125550100', 'America/Chicago',
        'USD', '1 Main St', 'Chicago', 'IL', '60601', 'US', 41.88, -87.62, array['PICKUP'],
        '[]'::jsonb, 0, 0, 'online')`.execute(db);

    await migrateToLatest(db, STORES_SCHEMA, storesMigrations);
    expect(
      await db
        .selectFrom('stores')
        .select(['item_availability_version', 'event_version'])
        .where('store_id', '=', storeId)
        .executeTakeFirstOrThrow(),
    ).toEqual({ item_availability_version: 0, event_version: 0 });
    expect(await tableExists('outbox')).toBe(true);
    // An override belongs to a store: none for a store that does not exist, and none left
    // when its store goes.
    await expect(
      db
        .insertInto('item_availability_overrides')
        .values({ store_id: randomUUID(), item_id: randomUUID(), until: null })
        .execute(),
    ).rejects.toThrow(/foreign key/);
    await migrateTo(BEFORE_ITEM_AVAILABILITY);
    expect(await tableExists('item_availability_overrides')).toBe(false);
    expect(await tableExists('outbox')).toBe(false);
    const { rows } = await sql<{ column_name: string }>`
      select column_name from information_schema.columns
      where table_schema = current_schema() and table_name = 'stores'
        and column_name in ('item_availability_version', 'event_version')`.execute(db);
    expect(rows).toEqual([]);

    await migrateToLatest(db, STORES_SCHEMA, storesMigrations);
    await db
      .insertInto('item_availability_overrides')
      .values({ store_id: storeId, item_id: randomUUID(), until: null })
      .execute();
    await db.deleteFrom('stores').where('store_id', '=', storeId).execute();
    const left = await db
      .selectFrom('item_availability_overrides')
      .selectAll()
      .where('store_id', '=', storeId)
      .execute();
    expect(left).toEqual([]);
  });
});
