import { createDatabase, createOutboxRelay, migrateToLatest, streamName } from '@pcp/service-kit';
import { Migrator, sql, type Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import { CATALOG_SCHEMA, catalogMigrations, type CatalogDatabase } from '../../src/app.js';

let env: TestEnvironment;
let db: Kysely<CatalogDatabase>;

/** The last migration before the outbox kept a sequence and aggregate versions. */
const BEFORE_ORDERED_OUTBOX = '2026-11-24T0100-ingest-run-fairness';

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

describe('catalog migration to the ordered outbox', () => {
  it('keeps the events written before it, published or not, and publishes the pending ones', async () => {
    const migrator = new Migrator({
      db: db as Kysely<unknown>,
      migrationTableSchema: CATALOG_SCHEMA,
      provider: { getMigrations: () => Promise.resolve(catalogMigrations) },
    });
    // The template database is migrated: step back to before the ordered outbox.
    const down = await migrator.migrateTo(BEFORE_ORDERED_OUTBOX);
    expect(down.error).toBeUndefined();
    // The test environment applied the JetStream topology.
    const stream = streamName(env.prefix, 'events');
    const subject = `${env.prefix}.events.catalog.v1.activated`;
    const [published, pending] = [randomUUID(), randomUUID()];
    await sql`
      insert into outbox (event_id, subject, payload, created_at, published_at)
      values (${published}, ${subject}, ${JSON.stringify({ id: published })}, now() - interval '1 minute', now()),
             (${pending}, ${subject}, ${JSON.stringify({ id: pending })}, now(), null)
    `.execute(db);

    await migrateToLatest(db, CATALOG_SCHEMA, catalogMigrations);
    const rows = await db
      .selectFrom('outbox')
      .select(['event_id', 'sequence', 'aggregate_type', 'aggregate_version', 'published_at'])
      .orderBy('sequence')
      .execute();
    expect(rows.map((row) => [row.event_id, row.aggregate_type, row.aggregate_version])).toEqual([
      [published, 'legacy', 1],
      [pending, 'legacy', 1],
    ]);

    const relay = createOutboxRelay({ db, js: env.nc.jetstream(), logger: env.logger });
    await relay.nudge();
    await relay.stop();
    const jsm = await env.nc.jetstreamManager();
    expect((await jsm.streams.info(stream)).state.messages).toBe(1);
    const message = await jsm.streams.getMessage(stream, { seq: 1 });
    expect(message.json()).toEqual({ id: pending });
  });
});
