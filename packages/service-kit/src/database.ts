import { Kysely, Migrator, PostgresDialect, sql, type Migration } from 'kysely';
import pg from 'pg';

export type { Migration } from 'kysely';

// int8 (bigint, count(*)) as a JS number: every int8 this platform stores (money in minor
// units, counts) is validated to stay within Number.MAX_SAFE_INTEGER.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * A Kysely instance over a pg pool whose connections resolve unqualified names in the
 * service's own schema; no service reaches into another's.
 */
export function createDatabase<DB>(options: {
  url: string;
  schema: string;
  maxConnections?: number;
  applicationName: string;
}): Kysely<DB> {
  if (!/^[a-z_][a-z0-9_]*$/.test(options.schema))
    throw new Error(`Bad schema name ${options.schema}`);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName,
    options: `-c search_path=${options.schema}`,
    connectionTimeoutMillis: 5_000,
  });
  // An idle connection the server closed (a restart, a failover, a terminated backend): the
  // pool drops it and connects anew for the next query. Unheard, the event ends the process.
  pool.on('error', () => undefined);
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

/** Bring the service's schema to its latest migration; safe to run from many replicas at once. */
export async function migrateToLatest<DB>(
  db: Kysely<DB>,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<string[]> {
  const migrator = new Migrator({
    db: db as Kysely<unknown>,
    migrationTableSchema: schema,
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName;
    throw new Error(`Migration ${failed ?? ''} of schema ${schema} failed`, { cause: error });
  }
  return (results ?? []).map((result) => result.migrationName);
}

/** Readiness check: the pool can run a query. */
export async function pingDatabase<DB>(db: Kysely<DB>): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}
