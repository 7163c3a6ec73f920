import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { CATALOG_SCHEMA, catalogMigrations, type CatalogDatabase } from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<CatalogDatabase>;

/** The last migration before runs kept when they started. */
const BEFORE_RUN_LIST = '2026-12-20T0120-modes-data-catalog-mode';

const migrator = () =>
  new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: CATALOG_SCHEMA,
    provider: { getMigrations: () => Promise.resolve(catalogMigrations) },
  });

beforeAll(async () => {
  env = await createTestEnvironment();
  db = createDatabase<CatalogDatabase>({
    url: env.databaseUrl,
    schema: CATALOG_SCHEMA,
    applicationName: 'test',
  });
});

afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

describe('the ingest run list migration', () => {
  it('starts runs taken up before it when they first showed processing', async () => {
    expect((await migrator().migrateTo(BEFORE_RUN_LIST)).error).toBeUndefined();
    const [queued, pulled, processed] = [randomUUID(), randomUUID(), randomUUID()];
    const storeId = randomUUID();
    await sql`
      insert into ingest_runs (run_id, store_id, partner_id, callback_url, currency, status,
        attempts, processing_at)
      values (${queued}, ${storeId}, ${randomUUID()}, 'https://a.example/c.json', 'USD',
                'queued', 0, null),
             (${pulled}, ${storeId}, ${randomUUID()}, 'https://a.example/c.json', 'USD',
                'failed', 1, null),
             (${processed}, ${storeId}, ${randomUUID()}, 'https://a.example/c.json', 'USD',
                'succeeded', 2, '2026-11-22T09:00:02Z')
    `.execute(db);
    await migrateToLatest(db, CATALOG_SCHEMA, catalogMigrations);
    const rows = await db
      .selectFrom('ingest_runs')
      .select(['run_id', 'started_at'])
      .where('store_id', '=', storeId)
      .execute();
    expect(Object.fromEntries(rows.map((row) => [row.run_id, row.started_at]))).toEqual({
      [queued]: null,
      [pulled]: null,
      [processed]: new Date('2026-11-22T09:00:02Z'),
    });
  });

  it('rolls back and forward again', async () => {
    expect((await migrator().migrateTo(BEFORE_RUN_LIST)).error).toBeUndefined();
    await migrateToLatest(db, CATALOG_SCHEMA, catalogMigrations);
    const index = await sql<{ indexname: string }>`
      select indexname from pg_indexes
       where schemaname = current_schema() and indexname = 'ingest_runs_store_created_idx'
    `.execute(db);
    expect(index.rows).toHaveLength(1);
  });
});
