import { sql } from 'kysely';
import { AppError } from './app-error.js';

/**
 * A place in a list ordered newest first: a row's created_at (UTC, to the microsecond that
 * Postgres keeps, so no two rows are confused) and its id.
 */
export interface ListKey {
  readonly createdAt: string;
  readonly id: string;
}

/** A created_at column (`created_at`, or qualified in a join) as a ListKey spells it. */
export const createdAtKeyOf = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** A row's created_at as a ListKey spells it. */
export const createdAtKey = createdAtKeyOf('created_at');

/** A list's id column: a uuid (most lists) or a bigint identity (the gateway's request log). */
export type ListIdType = 'uuid' | 'bigint';

/** Rows after `key` in (created_at desc, <id column> desc) order. */
export const olderThan = (
  key: ListKey,
  idColumn: string,
  createdAtColumn = 'created_at',
  idType: ListIdType = 'uuid',
) =>
  sql<boolean>`(${sql.ref(createdAtColumn)}, ${sql.ref(idColumn)}) < (${key.createdAt}::timestamptz, ${key.id}::${sql.raw(idType)})`;

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

/** A cursor's text: the key's microsecond UTC instant and id (as issued: lowercase, no sign). */
const cursorText: Record<ListIdType, RegExp> = {
  uuid: /^([1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/,
  bigint: /^([1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|([1-9]\d{0,18})$/,
};

/** The largest bigint: a longer id would make Postgres refuse the cast. */
const MAX_BIGINT = 2n ** 63n - 1n;

/** Opaque to partners: base64url of `<created_at>|<id>`. */
export function encodeCursor(key: ListKey): string {
  return Buffer.from(`${key.createdAt}|${key.id}`).toString('base64url');
}

/**
 * The key a cursor of a list names, or 400 REQUEST_INVALID naming the query parameter that
 * carried it (`cursor`, or `before` on the newer lists).
 */
export function decodeCursor(
  cursor: string,
  parameter = 'cursor',
  idType: ListIdType = 'uuid',
): ListKey {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '';
  const match = cursorText[idType].exec(text);
  const createdAt = match?.[1];
  const id = match?.[2];
  // The instant must be a real one (no 30 February), or Postgres would refuse it.
  const millis = createdAt === undefined ? NaN : Date.parse(`${createdAt.slice(0, 23)}Z`);
  if (
    createdAt === undefined ||
    id === undefined ||
    Number.isNaN(millis) ||
    (idType === 'bigint' && BigInt(id) > MAX_BIGINT) ||
    new Date(millis).toISOString().slice(0, 23) !== createdAt.slice(0, 23)
  ) {
    const message = 'Not a cursor of this list; send the nextCursor of the previous page';
    throw new AppError('REQUEST_INVALID', `/${parameter}: ${message}`, {
      errors: [{ code: 'INVALID_VALUE', message, pointer: `/${parameter}` }],
    });
  }
  return { createdAt, id };
}
