import { CATALOG_SCHEMA, catalogMigrations } from '@pcp/catalog';
import { GATEWAY_SCHEMA, gatewayMigrations } from '@pcp/gateway';
import { createDatabase, migrateToLatest } from '@pcp/service-kit';
import { ORDERING_SCHEMA, orderingMigrations } from '@pcp/ordering';
import { PAYMENTS_SCHEMA, paymentsMigrations } from '@pcp/payments';
import { STORES_SCHEMA, storesMigrations } from '@pcp/stores';
import { connect, type JetStreamManager } from 'nats';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { build } from '@pcp/setup';
import { databaseUrlFor, resolveServers } from './servers.js';

/** Databases left by runs that died more than this long ago are dropped. */
const STALE_AFTER_SECONDS = 3_600;

export const TEST_DATABASE_PREFIX = 'pcp_t_';
/**
 * A stream of a test file: environment.ts gives each the NATS prefix `test_<epoch>_<hex>`.
 * Not merely `test_`: a deployment may well be called `test`.
 */
export const TEST_STREAM_NAME = /^test_\d+_[0-9a-f]+_/;

/**
 * Once per run: find the servers (or start containers), then migrate every service's schema
 * into a template database; each test file copies it (CREATE DATABASE … TEMPLATE), which is
 * fast and fully isolated. The returned teardown drops it and stops what was started.
 */
export async function prepareTestRun() {
  // Tests start services as processes from their build: never from a stale one, even under
  // `npx vitest` run directly (incremental; about a second when nothing changed).
  build();
  const servers = await resolveServers();
  const { databaseUrl } = servers.urls;
  const admin = new pg.Client({ connectionString: databaseUrlFor(databaseUrl, 'postgres') });
  await admin.connect();
  await dropStaleDatabases(admin);
  const nc = await connect({ servers: servers.urls.natsUrl, name: 'test-setup' });
  await removeStaleStreams(await nc.jetstreamManager());
  await nc.close();

  const template = `${TEST_DATABASE_PREFIX}${Math.floor(Date.now() / 1000)}_tmpl_${randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${template}`);
  for (const [schema, migrations] of [
    [GATEWAY_SCHEMA, gatewayMigrations],
    [STORES_SCHEMA, storesMigrations],
    [CATALOG_SCHEMA, catalogMigrations],
    [ORDERING_SCHEMA, orderingMigrations],
    [PAYMENTS_SCHEMA, paymentsMigrations],
  ] as const) {
    const db = createDatabase({
      url: databaseUrlFor(databaseUrl, template),
      schema,
      applicationName: 'test-setup',
    });
    await migrateToLatest(db, schema, migrations);
    await db.destroy();
  }

  return {
    urls: servers.urls,
    template,
    async teardown() {
      await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
      await admin.end();
      await servers.stop();
    },
  };
}

async function dropStaleDatabases(admin: pg.Client) {
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname LIKE '${TEST_DATABASE_PREFIX}%'`,
  );
  const now = Date.now() / 1000;
  for (const { datname } of rows) {
    const createdAt = Number(datname.slice(TEST_DATABASE_PREFIX.length).split('_')[0]);
    if (Number.isFinite(createdAt) && now - createdAt > STALE_AFTER_SECONDS) {
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
  }
}

/**
 * Streams (with their consumers) of test files that died before their cleanup: names that
 * `isTestStream`, created before `createdBefore`. Returns the names it removed.
 */
export async function removeStaleStreams(
  jsm: JetStreamManager,
  {
    isTestStream = (name: string) => TEST_STREAM_NAME.test(name),
    createdBefore = new Date(Date.now() - STALE_AFTER_SECONDS * 1000),
  } = {},
): Promise<string[]> {
  const stale: string[] = [];
  for await (const stream of jsm.streams.list()) {
    if (isTestStream(stream.config.name) && new Date(stream.created) < createdBefore) {
      stale.push(stream.config.name);
    }
  }
  for (const name of stale) {
    // Another run starting at the same time may remove it first.
    await jsm.streams.delete(name).catch((error: unknown) => {
      if (!/stream not found/i.test(String(error))) throw error;
    });
  }
  return stale;
}
