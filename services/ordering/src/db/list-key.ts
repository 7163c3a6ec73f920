import { sql } from 'kysely';

/**
 * A place in a list ordered newest first: a row's created_at (UTC, to the microsecond that
 * Postgres keeps, so no two rows are confused) and its id.
 */
export interface ListKey {
  readonly createdAt: string;
  readonly id: string;
}

/** A row's created_at as a ListKey spells it. */
export const createdAtKey = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Rows after `key` in (created_at desc, <id column> desc) order. */
export const olderThan = (key: ListKey, idColumn: string) =>
  sql<boolean>`(created_at, ${sql.ref(idColumn)}) < (${key.createdAt}::timestamptz, ${key.id}::uuid)`;

/** A page of `limit` rows from `limit + 1` fetched, and the key of its last row when more follow. */
export function pageOf<Row extends { created_at_key: string }>(
  rows: Row[],
  limit: number,
  idOf: (row: Row) => string,
): { rows: Row[]; next: ListKey | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    rows: page,
    next: rows.length > limit && last ? { createdAt: last.created_at_key, id: idOf(last) } : null,
  };
}
