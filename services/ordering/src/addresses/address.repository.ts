import { maxAddressesPerEndUser } from '@pcp/contracts';
import { sql, type Insertable, type Kysely } from 'kysely';
import type { AddressRow, AddressTable, OrderingDatabase } from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/**
 * Save an end user's address: the same address (fingerprint) keeps its row; a new one is
 * refused (`limitReached`) when the end user holds `maxAddresses`. The owner's rows are
 * locked meanwhile, so concurrent saves cannot pass the limit or duplicate an address.
 */
export function saveAddress(
  db: Db,
  address: Omit<Insertable<AddressTable>, 'deleted_at'>,
  maxAddresses: number,
): Promise<{ row: AddressRow; created: boolean } | { limitReached: true }> {
  return db.transaction().execute(async (trx) => {
    const owner = `${address.partner_id}/${address.end_user_id}`;
    await sql`select pg_advisory_xact_lock(hashtextextended(${owner}, 1))`.execute(trx);
    const live = trx
      .selectFrom('addresses')
      .where('partner_id', '=', address.partner_id)
      .where('end_user_id', '=', address.end_user_id)
      .where('deleted_at', 'is', null);
    const existing = await live
      .selectAll()
      .where('fingerprint', '=', address.fingerprint)
      .executeTakeFirst();
    if (existing) return { row: existing, created: false };
    const { count } = await live
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    if (Number(count) >= maxAddresses) return { limitReached: true };
    const row = await trx
      .insertInto('addresses')
      .values({ ...address, deleted_at: null })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { row, created: true };
  });
}

/** The end user's live addresses, newest first. */
export function listAddresses(db: Db, partnerId: string, endUserId: string): Promise<AddressRow[]> {
  return db
    .selectFrom('addresses')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('address_id')
    .limit(maxAddressesPerEndUser)
    .execute();
}

/** One of the end user's live addresses. */
export function findAddress(
  db: Db,
  partnerId: string,
  endUserId: string,
  addressId: string,
): Promise<AddressRow | undefined> {
  return db
    .selectFrom('addresses')
    .selectAll()
    .where('address_id', '=', addressId)
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** Delete one of the end user's addresses (again is fine); false when it is not theirs. */
export async function deleteAddress(
  db: Db,
  partnerId: string,
  endUserId: string,
  addressId: string,
): Promise<boolean> {
  const result = await db
    .updateTable('addresses')
    .set({ deleted_at: sql`coalesce(deleted_at, now())` })
    .where('address_id', '=', addressId)
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
