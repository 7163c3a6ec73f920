import { sql, type Kysely, type Updateable } from 'kysely';
import type {
  OrderingDatabase,
  PlaceAttemptRow,
  PlaceAttemptTable,
  PlaceStep,
} from './ordering.table.js';

type Db = Kysely<OrderingDatabase>;

export type Claim =
  /** `resumed`: a key whose earlier run did not finish, taken up from its last recovery point. */
  | { kind: 'claimed'; attempt: PlaceAttemptRow; resumed: boolean }
  | { kind: 'replay'; attempt: RecordedAttempt }
  | { kind: 'conflict' }
  | { kind: 'busy'; retryAfterSeconds: number };

/** A key's recorded answer, with what a replay must match (the key's owner and body). */
export type RecordedAttempt = Pick<
  PlaceAttemptRow,
  'partner_id' | 'end_user_id' | 'fingerprint' | 'order_id' | 'response_status' | 'response_body'
>;

/**
 * The recorded answer of a key, if it has one: a final answer never changes, so a replay
 * reads it without a lock or a transaction (one round trip, and not the attempt's snapshot).
 */
export function findRecordedAttempt(db: Db, key: string): Promise<RecordedAttempt | undefined> {
  return db
    .selectFrom('place_attempts')
    .select([
      'partner_id',
      'end_user_id',
      'fingerprint',
      'order_id',
      'response_status',
      'response_body',
    ])
    .where('idempotency_key', '=', key)
    .where('response_status', 'is not', null)
    .executeTakeFirst();
}

interface ClaimRequest {
  key: string;
  partnerId: string;
  endUserId: string;
  fingerprint: string;
  orderId: string;
  holder: string;
  leaseMs: number;
  retentionMs: number;
}

/**
 * Take an Idempotency-Key for one run of place (contract §8): a new key is inserted with
 * this holder's lease; a known key is the owner's and body's only, replays once final, and
 * is taken over only when its holder's lease has lapsed (a holder that died). Leases use
 * the database's clock, the one clock every replica shares.
 */
export async function claimAttempt(db: Db, claim: ClaimRequest): Promise<Claim> {
  // A new key is one statement; a known one is examined under its row lock. A key deleted
  // between the two (the retention sweep) is simply new again.
  for (let tries = 1; ; tries++) {
    const inserted = await insertAttempt(db, claim);
    if (inserted) return { kind: 'claimed', attempt: inserted, resumed: false };
    const known = await db.transaction().execute((trx) => claimKnownAttempt(trx, claim));
    if (known) return known;
    if (tries === 3) throw new Error('an Idempotency-Key kept vanishing while it was claimed');
  }
}

function insertAttempt(db: Db, claim: ClaimRequest): Promise<PlaceAttemptRow | undefined> {
  return db
    .insertInto('place_attempts')
    .values({
      idempotency_key: claim.key,
      partner_id: claim.partnerId,
      end_user_id: claim.endUserId,
      fingerprint: claim.fingerprint,
      order_id: claim.orderId,
      step: 'started',
      snapshot: null,
      store_rejection: null,
      lease_owner: claim.holder,
      lease_expires_at: sql<Date>`now() + ${claim.leaseMs} * interval '1 millisecond'`,
      expires_at: sql<Date>`now() + ${claim.retentionMs} * interval '1 millisecond'`,
    })
    .onConflict((oc) => oc.column('idempotency_key').doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** The claim of a key that exists, under its row lock; undefined once it is gone. */
async function claimKnownAttempt(trx: Db, claim: ClaimRequest): Promise<Claim | undefined> {
  const existing = await trx
    .selectFrom('place_attempts')
    .selectAll()
    .select(sql<number>`extract(epoch from (lease_expires_at - now())) * 1000`.as('lease_left_ms'))
    .where('idempotency_key', '=', claim.key)
    .forUpdate()
    .executeTakeFirst();
  if (!existing) return undefined;
  if (
    existing.partner_id !== claim.partnerId ||
    existing.end_user_id !== claim.endUserId ||
    existing.fingerprint !== claim.fingerprint
  ) {
    return { kind: 'conflict' };
  }
  if (existing.response_status !== null) return { kind: 'replay', attempt: existing };
  const leaseLeftMs = Number(existing.lease_left_ms ?? 0);
  if (existing.lease_owner !== null && leaseLeftMs > 0) {
    return { kind: 'busy', retryAfterSeconds: Math.max(1, Math.ceil(leaseLeftMs / 1000)) };
  }
  const taken = await trx
    .updateTable('place_attempts')
    .set({
      lease_owner: claim.holder,
      lease_expires_at: sql<Date>`now() + ${claim.leaseMs} * interval '1 millisecond'`,
      updated_at: sql<Date>`now()`,
    })
    .where('idempotency_key', '=', claim.key)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { kind: 'claimed', attempt: taken, resumed: true };
}

/** Thrown when another holder took the key over: this run must stop without writing. */
export class LeaseLostError extends Error {
  constructor() {
    super('the place attempt lease was taken over');
  }
}

/**
 * Record a recovery point (with what it learned) as this holder, in the caller's
 * transaction when given one; a holder that lost its lease writes nothing.
 */
export async function advanceAttempt(
  db: Db,
  key: string,
  holder: string,
  step: PlaceStep,
  changes: Omit<Updateable<PlaceAttemptTable>, 'step' | 'idempotency_key'> = {},
): Promise<PlaceAttemptRow> {
  const row = await db
    .updateTable('place_attempts')
    .set({ ...changes, step, updated_at: sql<Date>`now()` })
    .where('idempotency_key', '=', key)
    .where('lease_owner', '=', holder)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new LeaseLostError();
  return row;
}

/** The final answer, replayed from now on; the lease ends with it. */
export function recordAttemptOutcome(
  db: Db,
  key: string,
  holder: string,
  response: { status: number; body: string },
): Promise<PlaceAttemptRow> {
  return advanceAttempt(db, key, holder, 'recorded', {
    response_status: response.status,
    response_body: response.body,
    lease_owner: null,
    lease_expires_at: null,
  });
}

/** Keep the key while a step runs; false when another holder has it. */
export async function renewLease(
  db: Db,
  key: string,
  holder: string,
  leaseMs: number,
): Promise<boolean> {
  const result = await db
    .updateTable('place_attempts')
    .set({ lease_expires_at: sql<Date>`now() + ${leaseMs} * interval '1 millisecond'` })
    .where('idempotency_key', '=', key)
    .where('lease_owner', '=', holder)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** A retryable failure: the key is free for the next request at once. */
export async function releaseLease(db: Db, key: string, holder: string): Promise<void> {
  await db
    .updateTable('place_attempts')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('idempotency_key', '=', key)
    .where('lease_owner', '=', holder)
    .execute();
}

/**
 * Keys past their retention, oldest first, for the cleanup: an unfinished one may still
 * hold an authorization, which the cleanup voids before deleting it.
 */
export function expiredAttempts(db: Db, limit: number): Promise<PlaceAttemptRow[]> {
  return db
    .selectFrom('place_attempts')
    .selectAll()
    .where('expires_at', '<', sql<Date>`now()`)
    .where((eb) =>
      eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', sql<Date>`now()`)]),
    )
    .orderBy('expires_at')
    .limit(limit)
    .execute();
}

export async function deleteAttempt(db: Db, key: string): Promise<void> {
  await db.deleteFrom('place_attempts').where('idempotency_key', '=', key).execute();
}
