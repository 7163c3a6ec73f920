import type { CatalogIngestError, CatalogIngestStatusValue, PartnerMode } from '@pcp/contracts';
import { createdAtKeyOf, olderThan, pageOf, type ListKey } from '@pcp/service-kit';
import { sql, type Expression, type Kysely } from 'kysely';
import type { CatalogDatabase, IngestRunRow } from './catalog.table.js';

type Db = Kysely<CatalogDatabase>;

const UNFINISHED = ['queued', 'pulling', 'processing'] as const;

/** Seeds of `hashtextextended` keeping advisory-lock key spaces apart (activation uses 0). */
const NOTIFY_LOCK_SEED = 1;
const PARTNER_QUEUE_LOCK_SEED = 3;
const CLAIM_LOCK_SEED = 4;

const leaseUntil = (leaseMs: number) => sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval`;
const staleBefore = (staleAfterMs: number) =>
  sql<Date>`now() - ${`${staleAfterMs} milliseconds`}::interval`;

/** What a run superseded at notify time reports; it was never downloaded. */
export const SUPERSEDED_WHILE_QUEUED: CatalogIngestError = {
  message:
    'Superseded by a later notification for this store before it started; this CatalogSet was not downloaded',
  path: '',
};

/** The partner already has `maxQueued` runs waiting to start; nothing was recorded. */
class PartnerQueueFull extends Error {}

/**
 * Record a notification's run. Only the latest document of a store matters, so the
 * store's runs still `queued` from earlier notifications fail as superseded in the same
 * transaction (returned: when each was created). A lock per store orders concurrent
 * notifications, so the later one always sees (and supersedes) the earlier. When the
 * partner would then have more than `maxQueued` runs queued, nothing changes and the
 * outcome is `queue_full`; a lock per partner keeps concurrent notifications under it.
 */
export async function insertRun(
  db: Db,
  run: {
    runId: string;
    storeId: string;
    partnerId: string;
    mode: PartnerMode;
    callbackUrl: string;
    currency: string;
  },
  maxQueued: number,
): Promise<
  { outcome: 'queued'; run: IngestRunRow; superseded: Date[] } | { outcome: 'queue_full' }
> {
  try {
    return { outcome: 'queued', ...(await recordRun(db, run, maxQueued)) };
  } catch (error) {
    if (error instanceof PartnerQueueFull) return { outcome: 'queue_full' };
    throw error;
  }
}

function recordRun(
  db: Db,
  run: {
    runId: string;
    storeId: string;
    partnerId: string;
    mode: PartnerMode;
    callbackUrl: string;
    currency: string;
  },
  maxQueued: number,
): Promise<{ run: IngestRunRow; superseded: Date[] }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${run.storeId}, ${NOTIFY_LOCK_SEED}))`.execute(
      trx,
    );
    await sql`select pg_advisory_xact_lock(hashtextextended(${run.partnerId}, ${PARTNER_QUEUE_LOCK_SEED}))`.execute(
      trx,
    );
    const inserted = await trx
      .insertInto('ingest_runs')
      .values({
        run_id: run.runId,
        store_id: run.storeId,
        partner_id: run.partnerId,
        mode: run.mode,
        callback_url: run.callbackUrl,
        currency: run.currency,
        status: 'queued',
        // It waits in the fair queue from now on; its work message wakes a claim.
        parked_at: sql`now()`,
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
    const { queued } = await trx
      .selectFrom('ingest_runs')
      .select((eb) => eb.fn.countAll<string>().as('queued'))
      .where('partner_id', '=', run.partnerId)
      .where('status', '=', 'queued')
      .executeTakeFirstOrThrow();
    // Thrown to roll the insert and the superseding back: a refused notification changes nothing.
    if (Number(queued) > maxQueued) throw new PartnerQueueFull();
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

/** Runs with whether their activation event still waits in the outbox and when it was published. */
function runsWithActivation(db: Db) {
  return db
    .selectFrom('ingest_runs')
    .leftJoin('outbox', 'outbox.event_id', 'ingest_runs.activation_event_id')
    .select([
      sql<boolean>`outbox.event_id is not null and outbox.published_at is null`.as('event_pending'),
      'outbox.published_at as event_published_at',
    ]);
}

/**
 * A partner's run of one of its stores (another partner's or store's run is not found),
 * with whether its activation event still waits in the outbox and when it was published.
 */
export function findPartnerRun(db: Db, runId: string, storeId: string, partnerId: string) {
  return runsWithActivation(db)
    .selectAll('ingest_runs')
    .where('ingest_runs.run_id', '=', runId)
    .where('ingest_runs.store_id', '=', storeId)
    .where('ingest_runs.partner_id', '=', partnerId)
    .executeTakeFirst();
}

/**
 * One page of a partner's store's runs, newest first (created_at desc, run_id desc) after
 * `after`, on the store's keyset index; each run's errors counted, not read. `next` is the
 * last run's key when more follow.
 */
export async function listStoreRuns(
  db: Db,
  query: { storeId: string; partnerId: string; limit: number; after?: ListKey },
) {
  let select = runsWithActivation(db)
    .select([
      'ingest_runs.run_id',
      'ingest_runs.status',
      'ingest_runs.summary',
      'ingest_runs.processing_at',
      'ingest_runs.started_at',
      'ingest_runs.created_at',
      'ingest_runs.updated_at',
      sql<number>`jsonb_array_length(ingest_runs.errors)`.as('error_count'),
      createdAtKeyOf('ingest_runs.created_at').as('created_at_key'),
    ])
    .where('ingest_runs.store_id', '=', query.storeId)
    .where('ingest_runs.partner_id', '=', query.partnerId);
  if (query.after)
    select = select.where(olderThan(query.after, 'ingest_runs.run_id', 'ingest_runs.created_at'));
  const rows = await select
    .orderBy('ingest_runs.created_at', 'desc')
    .orderBy('ingest_runs.run_id', 'desc')
    .limit(query.limit + 1)
    .execute();
  return pageOf(rows, query.limit, (row) => row.run_id);
}

export type ClaimOutcome =
  | { outcome: 'claimed'; run: IngestRunRow }
  /** No such run. */
  | { outcome: 'missing' }
  | { outcome: 'finished' }
  /** Another worker holds a live lease on it until `leaseExpiresAt`; nothing else was claimable. */
  | { outcome: 'held'; leaseExpiresAt: Date }
  /** Nothing was claimable (every waiting run's partner is at its cap): the run waits. */
  | { outcome: 'waiting' };

/**
 * Serializes claims (and the choice of runs to wake) across replicas, so each sees the
 * others' claims in the per-partner counts. A claim is a few statements; ingests take seconds.
 */
const lockClaims = (trx: Db) =>
  sql`select pg_advisory_xact_lock(hashtextextended('ingest claims', ${CLAIM_LOCK_SEED}))`.execute(
    trx,
  );

/**
 * The fair queue: of each partner with waiting runs (parked, no live lease) and a free slot
 * under `maxRunsPerPartner`, its oldest waiting run, ordered so the partner with the fewest
 * runs in progress, then the one whose run started least recently (never first), goes first.
 * `waitingBefore` keeps only runs waiting since before it (the reconciler's stale ones).
 */
async function fairestWaitingRuns(
  trx: Db,
  maxRunsPerPartner: number,
  limit: number,
  waitingBefore?: Expression<Date>,
): Promise<string[]> {
  const { rows } = await sql<{ run_id: string }>`
    with waiting as (
      select partner_id, min(sequence) as first_sequence
      from ingest_runs
      where status in ('queued', 'pulling', 'processing')
        and parked_at is not null
        ${waitingBefore ? sql`and parked_at < ${waitingBefore}` : sql``}
        and (lease_expires_at is null or lease_expires_at <= now())
      group by partner_id
    ), load as (
      select waiting.partner_id, waiting.first_sequence, turns.last_claimed_at,
        (select count(*) from ingest_runs busy
          where busy.partner_id = waiting.partner_id
            and busy.status in ('queued', 'pulling', 'processing')
            and busy.lease_expires_at > now()) as in_progress
      from waiting
      left join ingest_partner_turns turns on turns.partner_id = waiting.partner_id
    )
    select runs.run_id
    from load
    join ingest_runs runs on runs.sequence = load.first_sequence
    where load.in_progress < ${maxRunsPerPartner}
    order by load.in_progress, load.last_claimed_at nulls first, load.first_sequence
    limit ${limit}
  `.execute(trx);
  return rows.map((row) => row.run_id);
}

/**
 * Take the run `runId`'s work message stands for: the message is a wake-up, and the run
 * claimed is the fair queue's first (see {@link fairestWaitingRuns}), which may be another
 * run (of another partner). `runId` joins the waiting runs first if nobody works on it (a
 * crashed or released attempt), so it is never lost. A claim counts an attempt; the first
 * moves the run to `pulling`, a later one keeps the status the partner already saw (and its
 * `updated_at`).
 */
export function claimRun(
  db: Db,
  input: { runId: string; workerId: string; leaseMs: number; maxRunsPerPartner: number },
): Promise<ClaimOutcome> {
  return db.transaction().execute(async (trx): Promise<ClaimOutcome> => {
    await lockClaims(trx);
    await trx
      .updateTable('ingest_runs')
      .set({ parked_at: sql`coalesce(parked_at, now())` })
      .where('run_id', '=', input.runId)
      .where('status', 'in', UNFINISHED)
      .where((eb) =>
        eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<=', sql<Date>`now()`)]),
      )
      .execute();
    const [next] = await fairestWaitingRuns(trx, input.maxRunsPerPartner, 1);
    if (next) {
      const claimed = await trx
        .updateTable('ingest_runs')
        .set({
          status: sql`case when status = 'queued' then 'pulling' else status end`,
          updated_at: sql`case when status = 'queued' then now() else updated_at end`,
          attempts: sql`attempts + 1`,
          started_at: sql`coalesce(started_at, now())`,
          lease_owner: input.workerId,
          lease_expires_at: leaseUntil(input.leaseMs),
          parked_at: null,
        })
        .where('run_id', '=', next)
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('ingest_partner_turns')
        .values({ partner_id: claimed.partner_id, last_claimed_at: sql`now()` })
        .onConflict((oc) => oc.column('partner_id').doUpdateSet({ last_claimed_at: sql`now()` }))
        .execute();
      return { outcome: 'claimed', run: claimed };
    }

    const current = await trx
      .selectFrom('ingest_runs')
      .select(['status', 'lease_expires_at', sql<boolean>`lease_expires_at > now()`.as('leased')])
      .where('run_id', '=', input.runId)
      .executeTakeFirst();
    if (!current) return { outcome: 'missing' };
    if (current.status === 'succeeded' || current.status === 'failed') {
      return { outcome: 'finished' };
    }
    if (current.leased && current.lease_expires_at) {
      return { outcome: 'held', leaseExpiresAt: current.lease_expires_at };
    }
    return { outcome: 'waiting' };
  });
}

/**
 * Waiting runs to publish a wake-up for: the fair queue's first `limit` (one per partner
 * with a free slot), waiting longer than `waitingLongerThanMs` if given. Under the claims'
 * lock, so a run that a concurrent claim found no slot for is seen here once the slot frees.
 */
export function waitingRunsToWake(
  db: Db,
  maxRunsPerPartner: number,
  options: { limit: number; waitingLongerThanMs?: number },
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await lockClaims(trx);
    return fairestWaitingRuns(
      trx,
      maxRunsPerPartner,
      options.limit,
      options.waitingLongerThanMs === undefined
        ? undefined
        : staleBefore(options.waitingLongerThanMs),
    );
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

/** Give the run back to the fair queue after a transient failure; any wake-up may claim it. */
export async function releaseLease(db: Db, runId: string, workerId: string): Promise<void> {
  await db
    .updateTable('ingest_runs')
    .set({ lease_owner: null, lease_expires_at: null, parked_at: sql`now()` })
    .where('run_id', '=', runId)
    .where('lease_owner', '=', workerId)
    .execute();
}

/**
 * Unfinished runs nobody works on and not waiting in the fair queue (a worker died holding
 * it, or the run was inserted outside it), not re-published recently. The reconciler
 * publishes them again.
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
 * Delete up to `limit` finished runs last updated more than `retentionDays` ago, except each
 * store's latest run and any run an active catalog came from (its status stays readable).
 * Returns how many were deleted.
 */
export async function pruneFinishedRuns(
  db: Db,
  retentionDays: number,
  limit = 1_000,
): Promise<number> {
  const expired = db
    .selectFrom('ingest_runs as old')
    .select('old.run_id')
    .where('old.status', 'in', ['succeeded', 'failed'])
    .where('old.updated_at', '<', sql<Date>`now() - ${`${retentionDays} days`}::interval`)
    // Not the store's latest run.
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('ingest_runs as later')
          .select('later.run_id')
          .whereRef('later.store_id', '=', 'old.store_id')
          .whereRef('later.sequence', '>', 'old.sequence'),
      ),
    )
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('active_catalogs')
            .innerJoin(
              'catalog_versions',
              'catalog_versions.version_id',
              'active_catalogs.version_id',
            )
            .select('catalog_versions.run_id')
            .whereRef('catalog_versions.run_id', '=', 'old.run_id'),
        ),
      ),
    )
    .orderBy('old.updated_at')
    .limit(limit);
  const result = await db
    .deleteFrom('ingest_runs')
    .where('run_id', 'in', expired)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
