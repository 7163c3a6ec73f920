import { sql, type Kysely } from 'kysely';

// An order's delivery address is answered flat, like a store's: {address1, ..., country,
// latitude, longitude} instead of {latitude, longitude, address: {address1, ...}}. Stored
// orders and the snapshots of unfinished place attempts (which become orders) are rewritten.
// Recorded answers (response_body) stay as they were sent: a replay is byte for byte, and
// they expire within a day. A delivery address always had its postal fields (inline or
// saved), so every nested one is an object.

/** Where an address is stored: the jsonb column and the keys leading to it. */
const stored = [
  { table: 'orders', column: 'details', path: ['fulfillment', 'address'], unfinishedOnly: false },
  {
    table: 'place_attempts',
    column: 'snapshot',
    path: ['details', 'fulfillment', 'address'],
    // A finished attempt is never run again: its answer is replayed.
    unfinishedOnly: true,
  },
] as const;

const pathOf = (keys: readonly string[]) => sql`${sql.lit(`{${keys.join(',')}}`)}::text[]`;
/** The jsonb value at `keys` in `column`. */
const at = (column: string, keys: readonly string[]) =>
  sql`(${sql.ref(column)} #> ${pathOf(keys)})`;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const { table, column, path, unfinishedOnly } of stored) {
    const field = (key: string) => at(column, [...path, key]);
    await sql`
      update ${sql.table(table)}
      set ${sql.ref(column)} = jsonb_set(${sql.ref(column)}, ${pathOf(path)},
        ${field('address')} || jsonb_build_object(
          'latitude', ${field('latitude')}, 'longitude', ${field('longitude')}))
      where jsonb_typeof(${field('address')}) = 'object'
        ${unfinishedOnly ? sql`and response_status is null` : sql``}
    `.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const { table, column, path, unfinishedOnly } of stored) {
    const field = (key: string) => at(column, [...path, key]);
    await sql`
      update ${sql.table(table)}
      set ${sql.ref(column)} = jsonb_set(${sql.ref(column)}, ${pathOf(path)},
        jsonb_build_object(
          'latitude', ${field('latitude')}, 'longitude', ${field('longitude')},
          'address', ${at(column, path)} - 'latitude' - 'longitude'))
      where ${at(column, path)} ? 'address1'
        ${unfinishedOnly ? sql`and response_status is null` : sql``}
    `.execute(db);
  }
}
