import type { OrderError, PartnerMode } from '@pcp/contracts';
import { runPrepared, type EventEnvelope, type OutboxRowValues } from '@pcp/service-kit';
import { sql, type Kysely, type UpdateObject } from 'kysely';
import type {
  OrderingDatabase,
  OrderRow,
  OrderStatusChangeRow,
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

/**
 * True, and makes the statement's own transaction commit without waiting for the WAL flush
 * (synchronous_commit off, for that transaction only). For a point whose content can be
 * re-derived after a database crash; any later durable commit flushes it too.
 */
const relaxedCommit = sql<boolean>`set_config('synchronous_commit', 'off', true) is not null`;

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
      // A new key's commit does not wait for the WAL flush: lost in a database crash, the key
      // is new again (nothing has left the platform before `validated`), and the validated
      // point's durable commit flushes it with itself. In the row's values, so it runs
      // exactly when the row is written.
      step: sql<'started'>`case when ${relaxedCommit} then 'started' end`,
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
 * How the point is committed: `durable` waits for the WAL flush; `relaxed` does not, for a
 * point whose loss in a database crash only sends the key back to its previous point, from
 * which it gets to the same place (see the saga's table).
 */
export type Commit = 'durable' | 'relaxed';

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
  commit: Commit = 'durable',
): Promise<HeldAttempt> {
  const { settleAfterMs, snapshot, store_rejection, ...plain } = changes;
  await compareAndSet(db, attempt, commit, {
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
  commit: Commit,
  set: UpdateObject<OrderingDatabase, 'place_attempts'>,
): Promise<void> {
  if (attempt.lease_owner === null) throw new LeaseLostError();
  const update = db
    .updateTable('place_attempts')
    .set({ ...set, updated_at: sql<Date>`now()` })
    .where('idempotency_key', '=', attempt.idempotency_key)
    .where('lease_owner', '=', attempt.lease_owner)
    .where('step', '=', attempt.step)
    // A row is written only where every condition held, this one included.
    .$if(commit === 'relaxed', (qb) => qb.where(relaxedCommit))
    .returning('step');
  const updated = await runPrepared(db as Kysely<unknown>, update.compile());
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
  await compareAndSet(db, attempt, 'durable', {
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

/** What recording a placed order writes besides its attempt's answer. */
export interface PlacedOrder {
  readonly order: OrderRow;
  /** Its version 1 in the status history. */
  readonly statusChange: OrderStatusChangeRow;
  /** Its `order.created` event. */
  readonly event: OutboxRowValues;
  readonly envelope: EventEnvelope;
}

const ORDER_COLUMNS = [
  'order_id',
  'partner_id',
  'end_user_id',
  'store_id',
  'store_partner_id',
  'mode',
  'fulfillment_mode',
  'state',
  'status',
  'version',
  'details',
  'charge_id',
  'total_minor',
  'currency',
  'estimated_ready_at',
  'accept_by',
  'cancel_reason',
  'cancelled_by',
  'store_deleted_at',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof OrderRow)[];
const STATUS_CHANGE_COLUMNS = [
  'order_id',
  'version',
  'state',
  'status',
  'previous_status',
  'estimated_ready_at',
  'cancel_reason',
  'cancelled_by',
  'unavailable_item_ids',
  'changed_at',
] as const satisfies readonly (keyof OrderStatusChangeRow)[];
// Every column of each row, so none is left to a default the row does not state.
const everyColumnListed: [
  Exclude<keyof OrderRow, (typeof ORDER_COLUMNS)[number]>,
  Exclude<keyof OrderStatusChangeRow, (typeof STATUS_CHANGE_COLUMNS)[number]>,
] extends [never, never]
  ? true
  : false = true;
void everyColumnListed;
const OUTBOX_COLUMNS = [
  'event_id',
  'subject',
  'aggregate_type',
  'aggregate_id',
  'aggregate_version',
  'payload',
] as const satisfies readonly (keyof OutboxRowValues)[];

const columnList = (columns: readonly string[]) => columns.join(', ');

/**
 * The placed order's answer, its order (version 1), its status history and its event, as
 * one statement: the attempt's compare-and-set on its lease and step comes first, and the
 * rows are inserted only where it moved the attempt (one round trip, one durable commit; a
 * run that lost its key writes nothing and gets LeaseLostError).
 */
const RECORD_PLACED_ORDER = `
  with moved as (
    update place_attempts
       set step = 'recorded', response_status = $1, response_body = $2, lease_owner = null,
           lease_expires_at = null, settle_at = null,
           expires_at = now() + $3 * interval '1 millisecond', updated_at = now()
     where idempotency_key = $4 and lease_owner = $5 and step = $6
    returning idempotency_key
  ), placed as (
    insert into orders (${columnList(ORDER_COLUMNS)})
    select ${columnList(ORDER_COLUMNS)} from jsonb_populate_record(null::orders, $7::jsonb)
     where exists (select from moved)
  ), history as (
    insert into order_status_changes (${columnList(STATUS_CHANGE_COLUMNS)})
    select ${columnList(STATUS_CHANGE_COLUMNS)}
      from jsonb_populate_record(null::order_status_changes, $8::jsonb)
     where exists (select from moved)
  ), announced as (
    insert into outbox (${columnList(OUTBOX_COLUMNS)})
    select ${columnList(OUTBOX_COLUMNS)} from jsonb_populate_record(null::outbox, $9::jsonb)
     where exists (select from moved)
  )
  select count(*)::int as moved from moved`;

export async function recordPlacedOrder(
  db: Db,
  attempt: HeldAttempt,
  placed: PlacedOrder,
  response: { status: number; body: string },
  retentionMs: number,
): Promise<HeldAttempt> {
  if (attempt.lease_owner === null) throw new LeaseLostError();
  const [result] = await runPrepared<{ moved: number }>(db as Kysely<unknown>, {
    sql: RECORD_PLACED_ORDER,
    parameters: [
      response.status,
      response.body,
      retentionMs,
      attempt.idempotency_key,
      attempt.lease_owner,
      attempt.step,
      JSON.stringify(placed.order),
      JSON.stringify(placed.statusChange),
      // The payload as the envelope's object: a jsonb column of the record takes it as it is.
      JSON.stringify({ ...placed.event, payload: placed.envelope }),
    ],
  });
  if (result?.moved !== 1) throw new LeaseLostError();
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
