import { Kysely, Migrator, PostgresDialect, sql, type Migration } from 'kysely';
import { createHash } from 'node:crypto';
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
  // The same on a connection in use (a query or transaction running; the pool stops listening
  // while it is lent): its queries fail with the error, the pool discards it on release, and
  // the process lives on (a database outage makes it unready, never kills it).
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  pools.set(db, pool);
  return db;
}

/** Each database's pool, for the statements run as prepared statements. */
const pools = new WeakMap<object, pg.Pool>();

/** A compiled statement: Kysely's `.compile()` or a `sql` template's. */
export interface Statement {
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

/** Runs statements as named prepared statements on one connection. */
export type PreparedRunner = <Row>(statement: Statement) => Promise<Row[]>;

function poolOf(db: Kysely<unknown>): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('not a database made by createDatabase');
  return pool;
}

/**
 * Node-postgres sends every statement unnamed, so Postgres plans it at each execution. For
 * a hot statement whose plan costs more than running it, a name (derived from its text)
 * lets each connection plan it once and reuse the plan.
 */
function prepared(statement: Statement): pg.QueryConfig {
  return {
    name: `pcp_${createHash('sha1').update(statement.sql).digest('hex').slice(0, 20)}`,
    text: statement.sql,
    values: [...statement.parameters],
  };
}

/** One statement as a prepared statement (see {@link prepared}), on any pooled connection. */
export async function runPrepared<Row>(db: Kysely<unknown>, statement: Statement): Promise<Row[]> {
  const result = await poolOf(db).query(prepared(statement));
  return result.rows as Row[];
}

/** A transaction whose statements run as prepared statements; rolled back if `work` throws. */
export async function preparedTransaction<T>(
  db: Kysely<unknown>,
  work: (run: PreparedRunner) => Promise<T>,
): Promise<T> {
  const client = await poolOf(db).connect();
  // A connection that cannot even roll back is dropped, not handed to the next caller.
  let broken: Error | undefined;
  try {
    await client.query('begin');
    const value = await work(async <Row>(statement: Statement) => {
      const result = await client.query(prepared(statement));
      return result.rows as Row[];
    });
    await client.query('commit');
    return value;
  } catch (error) {
    await client.query('rollback').catch((rollback: unknown) => {
      broken = rollback instanceof Error ? rollback : new Error('rollback failed');
    });
    throw error;
  } finally {
    client.release(broken);
  }
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
