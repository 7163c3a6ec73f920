import type { CatalogIngestError, CatalogIngestStatusValue } from '@pcp/contracts';
import { sql, type Kysely } from 'kysely';
import type { CatalogDatabase, IngestRunRow } from './catalog.table.js';

type Db = Kysely<CatalogDatabase>;

const leaseUntil = (leaseMs: number) => sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval`;

export function insertRun(
  db: Db,
  run: { runId: string; storeId: string; partnerId: string; callbackUrl: string; currency: string },
) {
  return db
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
}

export async function markPublished(db: Db, runId: string): Promise<void> {
  await db
    .updateTable('ingest_runs')
    .set({ published_at: sql`now()` })
    .where('run_id', '=', runId)
    .execute();
}

/** A partner's run of one of its stores (another partner's or store's run is not found). */
/**
 * A partner's run of one of its stores (another partner's or store's run is not found),
 * with whether its activation event still waits in the outbox.
 */
export function findPartnerRun(db: Db, runId: string, storeId: string, partnerId: string) {
  return db
    .selectFrom('ingest_runs')
    .leftJoin('outbox', 'outbox.event_id', 'ingest_runs.activation_event_id')
    .selectAll('ingest_runs')
    .select(
      sql<boolean>`outbox.event_id is not null and outbox.published_at is null`.as('event_pending'),
    )
    .where('ingest_runs.run_id', '=', runId)
    .where('ingest_runs.store_id', '=', storeId)
    .where('ingest_runs.partner_id', '=', partnerId)
    .executeTakeFirst();
}

export function findRun(db: Db, runId: string) {
  return db.selectFrom('ingest_runs').selectAll().where('run_id', '=', runId).executeTakeFirst();
}

/**
 * Claim an unfinished run for `workerId`: only when nobody holds a live lease. A claim
 * (re)starts the run at `pulling` and counts an attempt.
 */
export function claimRun(db: Db, runId: string, workerId: string, leaseMs: number) {
  return db
    .updateTable('ingest_runs')
    .set({
      status: 'pulling',
      attempts: sql`attempts + 1`,
      lease_owner: workerId,
      lease_expires_at: leaseUntil(leaseMs),
      updated_at: sql`now()`,
    })
    .where('run_id', '=', runId)
    .where('status', 'in', ['queued', 'pulling', 'processing'])
    .where((eb) =>
      eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', sql<Date>`now()`)]),
    )
    .returningAll()
    .executeTakeFirst();
}

/**
 * Move a run the worker still holds. False when the lease was lost (another worker took
 * the run over), so a stalled worker can never overwrite a newer outcome.
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
      updated_at: sql`now()`,
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

/**
 * Unfinished runs nobody works on: lease lapsed (a worker died) or never claimed, and not
 * re-published recently. The reconciler publishes them again.
 */
export function findOrphanedRuns(
  db: Db,
  staleAfterMs: number,
  limit = 100,
): Promise<IngestRunRow[]> {
  const staleBefore = sql<Date>`now() - ${`${staleAfterMs} milliseconds`}::interval`;
  return db
    .selectFrom('ingest_runs')
    .selectAll()
    .where('status', 'in', ['queued', 'pulling', 'processing'])
    .where((eb) =>
      eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', sql<Date>`now()`)]),
    )
    .where((eb) => eb.or([eb('published_at', 'is', null), eb('published_at', '<', staleBefore)]))
    .where('updated_at', '<', staleBefore)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}
