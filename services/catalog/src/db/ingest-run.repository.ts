import type { CatalogIngestError, CatalogIngestStatusValue } from '@pcp/contracts';
import { sql, type Expression, type Kysely } from 'kysely';
import type { CatalogDatabase, IngestRunRow } from './catalog.table.js';

type Db = Kysely<CatalogDatabase>;

const UNFINISHED = ['queued', 'pulling', 'processing'] as const;

/** Seeds of `hashtextextended` keeping advisory-lock key spaces apart (activation uses 0). */
const NOTIFY_LOCK_SEED = 1;
const PARTNER_LOCK_SEED = 2;

const leaseUntil = (leaseMs: number) => sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval`;

/** What a run superseded at notify time reports; it was never downloaded. */
export const SUPERSEDED_WHILE_QUEUED: CatalogIngestError = {
  message:
    'Superseded by a later notification for this store before it started; this CatalogSet was not downloaded',
  path: '',
};

/**
 * Record a notification's run. Only the latest document of a store matters, so the
 * store's runs still `queued` from earlier notifications fail as superseded in the same
 * transaction (returned: when each was created). A lock per store orders concurrent
 * notifications, so the later one always sees (and supersedes) the earlier.
 */
export function insertRun(
  db: Db,
  run: { runId: string; storeId: string; partnerId: string; callbackUrl: string; currency: string },
): Promise<{ run: IngestRunRow; superseded: Date[] }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${run.storeId}, ${NOTIFY_LOCK_SEED}))`.execute(
      trx,
    );
    const inserted = await trx
      .insertInto('ingest_runs')
      .values({
        run_id: run.runId,
        store_id: run.storeId,
        partner_id: run.partnerId,
        callback_url: run.callbackUrl,
        currency: run.currency,
        status: 'queued',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    // A claim moves a run off `queued` in one statement, so no run superseded here is
    // being downloaded.
    const superseded = await trx
      .updateTable('ingest_runs')
      .set({
        status: 'failed',
        errors: JSON.stringify([SUPERSEDED_WHILE_QUEUED]),
        parked_at: null,
        updated_at: sql`now()`,
      })
      .where('store_id', '=', run.storeId)
      .where('status', '=', 'queued')
      .where('sequence', '<', inserted.sequence)
      .returning('created_at')
      .execute();
    return { run: inserted, superseded: superseded.map((row) => row.created_at) };
  });
}

export async function markPublished(db: Db, runId: string): Promise<void> {
  await db
    .updateTable('ingest_runs')
    .set({ published_at: sql`now()` })
    .where('run_id', '=', runId)
    .execute();
}

/**
 * A partner's run of one of its stores (another partner's or store's run is not found),
 * with whether its activation event still waits in the outbox and when it was published.
 */
export function findPartnerRun(db: Db, runId: string, storeId: string, partnerId: string) {
  return db
    .selectFrom('ingest_runs')
    .leftJoin('outbox', 'outbox.event_id', 'ingest_runs.activation_event_id')
    .selectAll('ingest_runs')
    .select([
      sql<boolean>`outbox.event_id is not null and outbox.published_at is null`.as('event_pending'),
      'outbox.published_at as event_published_at',
    ])
    .where('ingest_runs.run_id', '=', runId)
    .where('ingest_runs.store_id', '=', storeId)
    .where('ingest_runs.partner_id', '=', partnerId)
    .executeTakeFirst();
}

export type ClaimOutcome =
  | { outcome: 'claimed'; run: IngestRunRow }
  /** No such run. */
  | { outcome: 'missing' }
  | { outcome: 'finished' }
  /** Another worker holds a live lease on it until `leaseExpiresAt`. */
  | { outcome: 'held'; leaseExpiresAt: Date }
  /** Its partner is at its cap, or earlier runs wait: the run waits, parked. */
  | { outcome: 'parked'; partnerId: string };

/** Runs of the partner that some worker holds a live lease on (any replica). */
const runsInProgress = (trx: Db, partnerId: string | Expression<string>) =>
  trx
    .selectFrom('ingest_runs')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('partner_id', '=', partnerId)
    .where('status', 'in', UNFINISHED)
    .where('lease_expires_at', '>', sql<Date>`now()`);

/** Serializes claims and releases of one partner's runs across replicas. */
const lockPartner = (trx: Db, partnerId: string) =>
  sql`select pg_advisory_xact_lock(hashtextextended(${partnerId}, ${PARTNER_LOCK_SEED}))`.execute(
    trx,
  );

/**
 * Claim an unfinished run for `workerId` when nobody holds a live lease on it, its partner
 * has fewer than `maxRunsPerPartner` runs in progress and none of the partner's earlier runs
 * is parked; otherwise the run is parked until its turn comes. The count and the claim run
 * under the partner's lock, in a statement after it was taken, so concurrent claims on any
 * replica see each other. A claim counts an attempt; the first moves the run to `pulling`,
 * a later one keeps the status the partner already saw (and its `updated_at`).
 */
export function claimRun(
  db: Db,
  input: { runId: string; workerId: string; leaseMs: number; maxRunsPerPartner: number },
): Promise<ClaimOutcome> {
  return db.transaction().execute(async (trx): Promise<ClaimOutcome> => {
    const target = await trx
      .selectFrom('ingest_runs')
      .select(['partner_id', 'sequence'])
      .where('run_id', '=', input.runId)
      .executeTakeFirst();
    if (!target) return { outcome: 'missing' };
    await lockPartner(trx, target.partner_id);
    const claimed = await trx
      .updateTable('ingest_runs')
      .set({
        status: sql`case when status = 'queued' then 'pulling' else status end`,
        updated_at: sql`case when status = 'queued' then now() else updated_at end`,
        attempts: sql`attempts + 1`,
        lease_owner: input.workerId,
        lease_expires_at: leaseUntil(input.leaseMs),
        parked_at: null,
      })
      .where('run_id', '=', input.runId)
      .where('status', 'in', UNFINISHED)
      .where((eb) =>
        eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<=', sql<Date>`now()`)]),
      )
      .where((eb) => eb(runsInProgress(trx, target.partner_id), '<', input.maxRunsPerPartner))
      // Waiting runs go first, so a fresh notification cannot keep overtaking them.
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('ingest_runs as earlier')
              .select('earlier.run_id')
              .where('earlier.partner_id', '=', target.partner_id)
              .where('earlier.status', 'in', UNFINISHED)
              .where('earlier.parked_at', 'is not', null)
              .where('earlier.sequence', '<', target.sequence),
          ),
        ),
      )
      .returningAll()
      .executeTakeFirst();
    if (claimed) return { outcome: 'claimed', run: claimed };

    const current = await trx
      .selectFrom('ingest_runs')
      .select(['status', 'lease_expires_at', sql<boolean>`lease_expires_at > now()`.as('leased')])
      .where('run_id', '=', input.runId)
      .executeTakeFirstOrThrow();
    if (current.status === 'succeeded' || current.status === 'failed') {
      return { outcome: 'finished' };
    }
    if (current.leased && current.lease_expires_at) {
      return { outcome: 'held', leaseExpiresAt: current.lease_expires_at };
    }
    await trx
      .updateTable('ingest_runs')
      .set({ parked_at: sql`coalesce(parked_at, now())` })
      .where('run_id', '=', input.runId)
      .execute();
    return { outcome: 'parked', partnerId: target.partner_id };
  });
}

/**
 * Take the partner's oldest parked runs off the shelf, as many as it has free slots, and
 * mark them published: the caller publishes their work messages (should that fail, the
 * reconciler re-publishes them once `published_at` is stale). Under the partner's lock, so
 * a run parked concurrently is either seen here or saw the slot already free.
 */
export function unparkRuns(db: Db, partnerId: string, maxRunsPerPartner: number) {
  return db.transaction().execute(async (trx) => {
    await lockPartner(trx, partnerId);
    const { count } = await runsInProgress(trx, partnerId).executeTakeFirstOrThrow();
    const free = maxRunsPerPartner - count;
    if (free <= 0) return [];
    const next = trx
      .selectFrom('ingest_runs')
      .select('run_id')
      .where('partner_id', '=', partnerId)
      .where('status', 'in', UNFINISHED)
      .where('parked_at', 'is not', null)
      .orderBy('sequence')
      .limit(free);
    const unparked = await trx
      .updateTable('ingest_runs')
      .set({ parked_at: null, published_at: sql`now()` })
      .where('run_id', 'in', next)
      .returning(['run_id', 'sequence'])
      .execute();
    return unparked.sort((a, b) => a.sequence - b.sequence).map((row) => row.run_id);
  });
}

/**
 * Move a run the worker still holds. False when the lease was lost (another worker took
 * the run over), so a stalled worker can never overwrite a newer outcome. `updated_at`
 * moves only when the status does (a second attempt re-enters `processing`).
 */
export async function transitionRun(
  db: Db,
  runId: string,
  workerId: string,
  status: CatalogIngestStatusValue,
  errors: CatalogIngestError[] = [],
): Promise<boolean> {
  const terminal = status === 'succeeded' || status === 'failed';
  const result = await db
    .updateTable('ingest_runs')
    .set({
      status,
      errors: JSON.stringify(errors),
      updated_at: sql`case when status = ${status} then updated_at else now() end`,
      ...(status === 'processing' ? { processing_at: sql`coalesce(processing_at, now())` } : {}),
      ...(terminal ? { lease_owner: null, lease_expires_at: null } : {}),
    })
    .where('run_id', '=', runId)
    .where('lease_owner', '=', workerId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function extendLease(
  db: Db,
  runId: string,
  workerId: string,
  leaseMs: number,
): Promise<boolean> {
  const result = await db
    .updateTable('ingest_runs')
    .set({ lease_expires_at: leaseUntil(leaseMs) })
    .where('run_id', '=', runId)
    .where('lease_owner', '=', workerId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Give the run back after a transient failure so the next delivery can claim it at once. */
export async function releaseLease(db: Db, runId: string, workerId: string): Promise<void> {
  await db
    .updateTable('ingest_runs')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('run_id', '=', runId)
    .where('lease_owner', '=', workerId)
    .execute();
}

const staleBefore = (staleAfterMs: number) =>
  sql<Date>`now() - ${`${staleAfterMs} milliseconds`}::interval`;

/**
 * Unfinished runs nobody works on: lease lapsed (a worker died) or never claimed, not
 * parked, and not re-published recently. The reconciler publishes them again.
 */
export function findOrphanedRuns(
  db: Db,
  staleAfterMs: number,
  limit = 100,
): Promise<IngestRunRow[]> {
  return db
    .selectFrom('ingest_runs')
    .selectAll()
    .where('status', 'in', UNFINISHED)
    .where('parked_at', 'is', null)
    .where((eb) =>
      eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', sql<Date>`now()`)]),
    )
    .where((eb) =>
      eb.or([eb('published_at', 'is', null), eb('published_at', '<', staleBefore(staleAfterMs))]),
    )
    .where('updated_at', '<', staleBefore(staleAfterMs))
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

/**
 * Partners with runs parked longer than `staleAfterMs` and a free slot: the run that freed
 * it did not unpark the next (its worker died), so the reconciler does.
 */
export async function findPartnersWithParkedRuns(
  db: Db,
  staleAfterMs: number,
  maxRunsPerPartner: number,
  limit = 100,
): Promise<string[]> {
  const rows = await db
    .selectFrom('ingest_runs as parked')
    .select('parked.partner_id')
    .distinct()
    .where('parked.status', 'in', UNFINISHED)
    .where('parked.parked_at', '<', staleBefore(staleAfterMs))
    .where((eb) =>
      eb(runsInProgress(db, sql.ref<string>('parked.partner_id')), '<', maxRunsPerPartner),
    )
    .limit(limit)
    .execute();
  return rows.map((row) => row.partner_id);
}
