/**
 * deploy/postgres/bootstrap.sql on the real local Postgres: on a fresh database, with the roles
 * renamed for this run (roles are cluster-wide), run the file as a superuser (as CloudNativePG
 * does after initdb), give the roles LOGIN as the Cluster's `managed.roles` does, run every
 * service's migrations as its own role (as the migration Job does), then prove each role uses
 * its own schema and gets `permission denied` on every other.
 */
import { CATALOG_SCHEMA, catalogMigrations } from '@pcp/catalog';
import { GATEWAY_SCHEMA, gatewayMigrations } from '@pcp/gateway';
import { ORDERING_SCHEMA, orderingMigrations } from '@pcp/ordering';
import { PAYMENTS_SCHEMA, paymentsMigrations } from '@pcp/payments';
import { createDatabase, migrateToLatest, type Migration } from '@pcp/service-kit';
import { STORES_SCHEMA, storesMigrations } from '@pcp/stores';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { databaseUrlFor } from '@pcp/testing/servers';
import {
  containersOf,
  K8S_DIR,
  POSTGRES_DIR,
  SERVICES,
  type Doc,
  type ServiceName,
} from './kustomize.js';

const MIGRATIONS: Record<ServiceName, [schema: string, Record<string, Migration>]> = {
  gateway: [GATEWAY_SCHEMA, gatewayMigrations],
  stores: [STORES_SCHEMA, storesMigrations],
  catalog: [CATALOG_SCHEMA, catalogMigrations],
  ordering: [ORDERING_SCHEMA, orderingMigrations],
  payments: [PAYMENTS_SCHEMA, paymentsMigrations],
};

const BOOTSTRAP_SQL = readFileSync(join(POSTGRES_DIR, 'bootstrap.sql'), 'utf8');
const CLUSTER = parse(readFileSync(join(POSTGRES_DIR, 'cluster.yaml'), 'utf8')) as Doc;
const MANAGED_ROLES = CLUSTER.spec.managed.roles as Doc[];
/** The migration Job's pool size, which the migrations must work with. */
const MIGRATION_POOL = (() => {
  const job = parseAllDocuments(readFileSync(join(K8S_DIR, 'base/migrate-job.yaml'), 'utf8'))
    .map((d) => d.toJS() as Doc)
    .find((d) => d.kind === 'Job')!;
  const [step] = containersOf(job);
  return Number((step!.env as Doc[]).find((e) => e.name === 'DB_POOL_MAX')!.value);
})();

/** Roles made by runs that died more than this long ago are dropped. */
const STALE_AFTER_SECONDS = 3_600;
const ROLE_PREFIX = 'pcp_t_';
const id = `${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
const database = `pcp_t_${id}_roles`;
const rolePrefix = `${ROLE_PREFIX}${id}`;
const roleOf = (service: string) => `${rolePrefix}_${service}`;
const outsider = `${rolePrefix}_outsider`;
const passwords = new Map(SERVICES.map((s) => [s, randomBytes(12).toString('hex')]));

const servers = inject('servers');
const admin = new pg.Client({ connectionString: databaseUrlFor(servers.databaseUrl, 'postgres') });
const clients: pg.Client[] = [];

function urlAs(user: string, password: string): string {
  const url = new URL(databaseUrlFor(servers.databaseUrl, database));
  url.username = user;
  url.password = password;
  return url.toString();
}

async function connectAs(service: ServiceName): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: urlAs(roleOf(service), passwords.get(service)!),
  });
  await client.connect();
  clients.push(client);
  return client;
}

/** The file with this run's role names: `pcp_<service>` becomes `pcp_t_<id>_<service>`. */
function bootstrapForThisRun(): string {
  const pattern = new RegExp(`\\bpcp_(${SERVICES.join('|')})\\b`, 'g');
  return BOOTSTRAP_SQL.replace(pattern, (_match, service: string) => roleOf(service));
}

/** The error code of what `run` throws (42501: insufficient_privilege). */
async function failure(run: () => Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await run();
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { code, message };
  }
  throw new Error('expected the statement to fail');
}

async function withDatabase<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrlFor(servers.databaseUrl, database) });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function dropStaleRoles() {
  const { rows } = await admin.query<{ rolname: string }>(
    `SELECT rolname FROM pg_roles WHERE rolname LIKE '${ROLE_PREFIX}%'`,
  );
  const now = Date.now() / 1000;
  for (const { rolname } of rows) {
    const createdAt = Number(rolname.slice(ROLE_PREFIX.length).split('_')[0]);
    if (Number.isFinite(createdAt) && now - createdAt > STALE_AFTER_SECONDS) {
      // Still owning objects of a database not yet dropped: the next run tries again.
      await admin.query(`DROP ROLE IF EXISTS "${rolname}"`).catch(() => undefined);
    }
  }
}

beforeAll(async () => {
  await admin.connect();
  await dropStaleRoles();
  await admin.query(`CREATE DATABASE ${database}`);
  const sql = bootstrapForThisRun();
  expect(sql).not.toMatch(new RegExp(`\\bpcp_(${SERVICES.join('|')})\\b`));
  await withDatabase((client) => client.query(sql));
  // What CloudNativePG's managed.roles does with each role of cluster.yaml.
  for (const service of SERVICES) {
    const role = MANAGED_ROLES.find((r) => r.name === `pcp_${service}`)!;
    expect(role.login).toBe(true);
    await admin.query(
      `ALTER ROLE "${roleOf(service)}" LOGIN ${role.inherit === false ? 'NOINHERIT' : 'INHERIT'} ` +
        `CONNECTION LIMIT ${Number(role.connectionLimit)} PASSWORD '${passwords.get(service)!}'`,
    );
  }
  // The migration Job: each service's migrations as its own role.
  for (const service of SERVICES) {
    const [schema, migrations] = MIGRATIONS[service];
    const db = createDatabase({
      url: urlAs(roleOf(service), passwords.get(service)!),
      schema,
      maxConnections: MIGRATION_POOL,
      applicationName: 'postgres-roles-test',
    });
    try {
      await migrateToLatest(db, schema, migrations);
    } finally {
      await db.destroy();
    }
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  for (const role of [...SERVICES.map(roleOf), outsider]) {
    await admin.query(`DROP ROLE IF EXISTS "${role}"`);
  }
  await admin.end();
});

describe('deploy/postgres/bootstrap.sql: one role per service, rights on its own schema only', () => {
  it("each schema and every table its migrations created belong to the service's role", async () => {
    await withDatabase(async (client) => {
      for (const service of SERVICES) {
        const [schema] = MIGRATIONS[service];
        const owner = await client.query<{ owner: string }>(
          `SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = $1`,
          [schema],
        );
        expect(owner.rows[0]?.owner, schema).toBe(roleOf(service));
        const tables = await client.query<{ tableowner: string }>(
          `SELECT tableowner FROM pg_tables WHERE schemaname = $1`,
          [schema],
        );
        // The service's tables plus Kysely's two migration tables.
        expect(tables.rows.length, schema).toBeGreaterThan(2);
        expect(new Set(tables.rows.map((r) => r.tableowner)), schema).toEqual(
          new Set([roleOf(service)]),
        );
      }
    });
  });

  it('a role reads and writes its own schema', async () => {
    for (const service of SERVICES) {
      const [schema] = MIGRATIONS[service];
      const client = await connectAs(service);
      const migrated = await client.query<{ count: string }>(
        `SELECT count(*) FROM ${schema}.kysely_migration`,
      );
      expect(Number(migrated.rows[0]!.count), service).toBe(
        Object.keys(MIGRATIONS[service][1]).length,
      );
      await client.query(`CREATE TABLE ${schema}.roles_probe (n int)`);
      await client.query(`INSERT INTO ${schema}.roles_probe VALUES (1)`);
      const { rows } = await client.query<{ n: number }>(`SELECT n FROM ${schema}.roles_probe`);
      expect(rows).toEqual([{ n: 1 }]);
      await client.query(`DROP TABLE ${schema}.roles_probe`);
    }
  });

  it("a role gets permission denied on every other service's tables", async () => {
    const tableOf = new Map<string, string>();
    await withDatabase(async (client) => {
      for (const service of SERVICES) {
        const [schema] = MIGRATIONS[service];
        const { rows } = await client.query<{ tablename: string }>(
          `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename NOT LIKE 'kysely_%' ORDER BY tablename LIMIT 1`,
          [schema],
        );
        tableOf.set(schema, `${schema}.${rows[0]!.tablename}`);
      }
    });
    for (const service of SERVICES) {
      const client = await connectAs(service);
      for (const other of SERVICES.filter((s) => s !== service)) {
        const table = tableOf.get(MIGRATIONS[other][0])!;
        for (const statement of [`SELECT * FROM ${table} LIMIT 1`, `DELETE FROM ${table}`]) {
          const { code, message } = await failure(() => client.query(statement));
          expect(code, `${service}: ${statement}`).toBe('42501');
          expect(message).toMatch(/permission denied for schema/);
        }
      }
    }
  });

  it('no role creates schemas, temporary tables or anything in public', async () => {
    const client = await connectAs('stores');
    for (const statement of [
      'CREATE SCHEMA roles_probe',
      'CREATE TEMPORARY TABLE roles_probe (n int)',
      'CREATE TABLE public.roles_probe (n int)',
    ]) {
      const { code } = await failure(() => client.query(statement));
      expect(code, statement).toBe('42501');
    }
  });

  it('a role the file does not name cannot even connect', async () => {
    await admin.query(`CREATE ROLE "${outsider}" LOGIN PASSWORD 'outsider'`);
    const client = new pg.Client({ connectionString: urlAs(outsider, 'outsider') });
    const { code, message } = await failure(() => client.connect());
    expect(code).toBe('42501');
    expect(message).toMatch(/permission denied for database/);
  });

  it('running the file again changes nothing (CloudNativePG may, an operator may)', async () => {
    await withDatabase((client) => client.query(bootstrapForThisRun()));
    const client = await connectAs('ordering');
    await client.query(`SELECT count(*) FROM ordering.kysely_migration`);
    const { code } = await failure(() => client.query('SELECT 1 FROM payments.charges LIMIT 1'));
    expect(code).toBe('42501');
  });
});
