import type { OrderError, PartnerMode } from '@pcp/contracts';
import { runPrepared } from '@pcp/service-kit';
import { sql, type Kysely, type UpdateObject } from 'kysely';
import type {
  OrderingDatabase,
  PlaceAttemptRow,
  PlaceSnapshot,
  PlaceStep,
} from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

export type Claim =
  /**
   * `resumed`: a key whose earlier run did not finish, taken up from its last recovery point;
   * `expired`: it is past its deadline, so it is settled instead of resumed.
   */
  | { kind: 'claimed'; attempt: HeldAttempt; resumed: boolean; expired: boolean }
  | { kind: 'replay'; attempt: RecordedAttempt }
  | { kind: 'conflict' }
  | { kind: 'busy'; retryAfterSeconds: number };

/** A key's recorded answer, with what a replay must match (the key's owner and body). */
export type RecordedAttempt = Pick<
  PlaceAttemptRow,
  | 'partner_id'
  | 'end_user_id'
  | 'fingerprint'
  | 'raw_hash'
  | 'order_id'
  | 'response_status'
  | 'response_body'
>;

/**
 * An attempt as the run holding it knows it: what its steps read and write. The bookkeeping
 * columns (lease and answer deadlines, settlement) stay in the database, never read back.
 */
export type HeldAttempt = Pick<
  PlaceAttemptRow,
  | 'idempotency_key'
  | 'partner_id'
  | 'end_user_id'
  | 'mode'
  | 'order_id'
  | 'step'
  | 'snapshot'
  | 'charge_id'
  | 'store_rejection'
  | 'lease_owner'
  | 'response_status'
  | 'response_body'
  | 'created_at'
>;

/** The columns of a held attempt, as every statement that reads one names them. */
const heldColumns = [
  'idempotency_key',
  'partner_id',
  'end_user_id',
  'mode',
  'order_id',
  'step',
  'snapshot',
  'charge_id',
  'store_rejection',
  'lease_owner',
  'response_status',
  'response_body',
  'created_at',
] as const;

/**
 * The recorded answer of a key, if it has one: a final answer never changes, so a replay
 * reads it without a lock or a transaction (one prepared statement, and not the attempt's
 * snapshot); its text is replied as it is stored.
 */
export async function findRecordedAttempt(
  db: Db,
  key: string,
): Promise<(RecordedAttempt & { retained_ms: number }) | undefined> {
  const [row] = await runPrepared<RecordedAttempt & { retained_ms: number }>(
    db as Kysely<unknown>,
    {
      // retained_ms: how long the answer is kept from now, by the database's clock (the one
      // the deletion of expired answers reads), so no replica's own clock is trusted.
      sql: `select partner_id, end_user_id, fingerprint, raw_hash, order_id, response_status,
                   response_body,
                   (extract(epoch from (expires_at - now())) * 1000)::float8 as retained_ms
              from place_attempts
             where idempotency_key = $1 and response_status is not null`,
      parameters: [key],
    },
  );
  return row;
}

interface ClaimRequest {
  key: string;
  partnerId: string;
  endUserId: string;
  mode: PartnerMode;
  fingerprint: string;
  /** SHA-256 of the body's bytes, when the request came as bytes. */
  rawHash?: string;
  orderId: string;
  /** The run that asks: its replica and its own id. */
  holder: string;
  leaseMs: number;
  retentionMs: number;
}

const leaseUntil = (leaseMs: number) => sql<Date>`now() + ${leaseMs} * interval '1 millisecond'`;

/**
 * Take an Idempotency-Key for one run of place (docs/guide/orders.md#idempotency): a new key is
 * inserted with this run's lease and the deadline of its answer; a known key is the owner's and
 * body's only, replays once final, and is taken over only when its holder's lease has lapsed (a
 * holder that died). Leases use the database's clock, the one clock every replica shares.
 */
export async function claimAttempt(db: Db, claim: ClaimRequest): Promise<Claim> {
  // A new key is one statement; a known one is examined under its row lock. A key deleted
  // between the two (its answer's retention ended) is simply new again.
  for (let tries = 1; ; tries++) {
    const inserted = await insertAttempt(db, claim);
    if (inserted) return { kind: 'claimed', attempt: inserted, resumed: false, expired: false };
    const known = await db.transaction().execute((trx) => claimKnownAttempt(trx, claim));
    if (known) return known;
    if (tries === 3) throw new Error('an Idempotency-Key kept vanishing while it was claimed');
  }
}

async function insertAttempt(db: Db, claim: ClaimRequest): Promise<HeldAttempt | undefined> {
  const insert = db
    .insertInto('place_attempts')
    .values({
      idempotency_key: claim.key,
      partner_id: claim.partnerId,
      end_user_id: claim.endUserId,
      mode: claim.mode,
      fingerprint: claim.fingerprint,
      raw_hash: claim.rawHash ?? null,
      order_id: claim.orderId,
      step: 'started',
      snapshot: null,
      store_rejection: null,
      lease_owner: claim.holder,
      lease_expires_at: leaseUntil(claim.leaseMs),
      expires_at: sql<Date>`now() + ${claim.retentionMs} * interval '1 millisecond'`,
    })
    .onConflict((oc) => oc.column('idempotency_key').doNothing())
    .returning(heldColumns);
  const [row] = await runPrepared<HeldAttempt>(db as Kysely<unknown>, insert.compile());
  return row;
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
      lease_expires_at: leaseUntil(claim.leaseMs),
      updated_at: sql<Date>`now()`,
    })
    .where('idempotency_key', '=', claim.key)
    .returning(heldColumns)
    .returning(sql<boolean>`expires_at <= now()`.as('expired'))
    .executeTakeFirstOrThrow();
  const { expired, ...attempt } = taken;
  return { kind: 'claimed', attempt, resumed: true, expired };
}

/** Thrown when another run holds the key, or moved it on: this run must stop without writing. */
export class LeaseLostError extends Error {
  constructor() {
    super('the place attempt lease was taken over');
  }
}

/** What a step learnt, recorded with its next point. */
export interface AttemptChanges {
  readonly snapshot?: PlaceSnapshot;
  readonly charge_id?: string | null;
  readonly store_rejection?: OrderError[];
  /** The sweeper finishes the attempt this long from now if it is abandoned. */
  readonly settleAfterMs?: number;
}

/**
 * Record the next recovery point (with what the step learnt) as the run holding `attempt`,
 * from the step it read, as one prepared statement: a run that lost its lease, or whose key
 * another run moved on in the meantime, writes nothing, so a step never goes backwards. The
 * attempt as it now stands is this run's own knowledge, not read back (the snapshot is the
 * bulk of a row).
 */
export async function advanceAttempt(
  db: Db,
  attempt: HeldAttempt,
  step: PlaceStep,
  changes: AttemptChanges = {},
): Promise<HeldAttempt> {
  const { settleAfterMs, snapshot, store_rejection, ...plain } = changes;
  await compareAndSet(db, attempt, {
    ...plain,
    step,
    ...(snapshot ? { snapshot: JSON.stringify(snapshot) } : {}),
    ...(store_rejection ? { store_rejection: JSON.stringify(store_rejection) } : {}),
    ...(settleAfterMs === undefined
      ? {}
      : { settle_at: sql<Date>`now() + ${settleAfterMs} * interval '1 millisecond'` }),
  });
  return {
    ...attempt,
    ...plain,
    step,
    ...(snapshot ? { snapshot } : {}),
    ...(store_rejection ? { store_rejection } : {}),
  };
}

/** One update of the held attempt, compare-and-set on its lease and step; LeaseLostError if none. */
async function compareAndSet(
  db: Db,
  attempt: HeldAttempt,
  set: UpdateObject<OrderingDatabase, 'place_attempts'>,
): Promise<void> {
  if (attempt.lease_owner === null) throw new LeaseLostError();
  const update = db
    .updateTable('place_attempts')
    .set({ ...set, updated_at: sql<Date>`now()` })
    .where('idempotency_key', '=', attempt.idempotency_key)
    .where('lease_owner', '=', attempt.lease_owner)
    .where('step', '=', attempt.step)
    .returning('step');
  const statement = update.compile();
  // In a transaction the statement stays on its connection; alone it is a prepared one.
  const updated = db.isTransaction
    ? (await db.executeQuery(statement)).rows
    : await runPrepared(db as Kysely<unknown>, statement);
  if (updated.length === 0) throw new LeaseLostError();
}

/**
 * The final answer, replayed from now on for the retention (24 hours from the
 * answer); the lease and any settlement end with it.
 */
export async function recordAttemptOutcome(
  db: Db,
  attempt: HeldAttempt,
  response: { status: number; body: string },
  retentionMs: number,
): Promise<HeldAttempt> {
  await compareAndSet(db, attempt, {
    step: 'recorded',
    response_status: response.status,
    response_body: response.body,
    lease_owner: null,
    lease_expires_at: null,
    settle_at: null,
    expires_at: sql<Date>`now() + ${retentionMs} * interval '1 millisecond'`,
  });
  return {
    ...attempt,
    step: 'recorded',
    lease_owner: null,
    response_status: response.status,
    response_body: response.body,
  };
}

/** Keep the key while a step runs; false when another run has it. */
export async function renewLease(
  db: Db,
  key: string,
  holder: string,
  leaseMs: number,
): Promise<boolean> {
  const result = await db
    .updateTable('place_attempts')
    .set({ lease_expires_at: leaseUntil(leaseMs) })
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
 * Unanswered keys the sweeper should settle now, most overdue first: past their deadline, or
 * abandoned at a step the store may hold (`settle_at`), and held by no live run.
 */
export async function dueForSettlement(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('place_attempts')
    .select('idempotency_key')
    .where('response_status', 'is', null)
    .where((eb) =>
      eb.or([eb('expires_at', '<=', sql<Date>`now()`), eb('settle_at', '<=', sql<Date>`now()`)]),
    )
    .where((eb) =>
      eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<=', sql<Date>`now()`)]),
    )
    .orderBy(sql`least(settle_at, expires_at)`)
    .limit(limit)
    .execute();
  return rows.map((row) => row.idempotency_key);
}

/**
 * Claim a due key for the sweeper as `holder`, in one statement, and push its next
 * settlement back first (doubling from `backoffMs`, at most an hour): a key that cannot be
 * settled now waits its turn and never holds the others up. Undefined when a live run holds
 * it or it was answered meanwhile. `expired`: past its deadline, so it is settled, not resumed.
 */
export async function claimForSettlement(
  db: Db,
  key: string,
  holder: string,
  leaseMs: number,
  backoffMs: number,
): Promise<(PlaceAttemptRow & { expired: boolean }) | undefined> {
  return db
    .updateTable('place_attempts')
    .set({
      lease_owner: holder,
      lease_expires_at: leaseUntil(leaseMs),
      settle_at: sql<Date>`now() + least(${backoffMs} * power(2, least(settle_tries, 20)), ${MAX_SETTLE_BACKOFF_MS}) * interval '1 millisecond'`,
      settle_tries: sql<number>`settle_tries + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('idempotency_key', '=', key)
    .where('response_status', 'is', null)
    .where((eb) =>
      eb.or([eb('expires_at', '<=', sql<Date>`now()`), eb('settle_at', '<=', sql<Date>`now()`)]),
    )
    .where((eb) =>
      eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<=', sql<Date>`now()`)]),
    )
    .returningAll()
    .returning(sql<boolean>`expires_at <= now()`.as('expired'))
    .executeTakeFirst();
}

/** A key's settlement is retried at most this far apart. */
const MAX_SETTLE_BACKOFF_MS = 3_600_000;

/** Forget answered keys whose retention has ended (answers never change, so no lease). */
export async function deleteExpiredAnswers(db: Db, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('place_attempts')
    .where('idempotency_key', 'in', (qb) =>
      qb
        .selectFrom('place_attempts')
        .select('idempotency_key')
        .where('response_status', 'is not', null)
        .where('expires_at', '<', sql<Date>`now()`)
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
