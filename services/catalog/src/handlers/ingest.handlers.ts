import {
  subjects,
  type CatalogIngestRun,
  type CatalogIngestStatus,
  type CatalogIngestStatusValue,
} from '@pcp/contracts';
import {
  AppError,
  decodeCursor,
  encodeCursor,
  handle,
  requestMode,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type Logger,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import { randomUUID } from 'node:crypto';
import type { CatalogDatabase, IngestRunRow } from '../db/catalog.table.js';
import {
  findPartnerRun,
  insertRun,
  listStoreRuns,
  markPublished,
} from '../db/ingest-run.repository.js';
import { publishIngest } from '../worker/ingest-message.js';
import type { IngestRunMetrics } from '../worker/ingest-metrics.js';

/** How long partners should wait before polling the status (the 202's Retry-After). */
const POLL_AFTER_SECONDS = 2;
/** When a notification refused for a full queue may try again: about one run's download. */
const QUEUE_FULL_RETRY_AFTER_SECONDS = 10;

/** What a run's progress columns are, with its activation event's state. */
type RunProgress = Pick<IngestRunRow, 'status' | 'processing_at' | 'updated_at'> & {
  event_pending: boolean;
  event_published_at: Date | null;
};

/**
 * The run's status as partners see it. An activation whose event is not yet published still
 * reads `processing`: once `succeeded` shows, every service has been told (ordering's caches
 * refresh on the event, so a cart priced after that uses the new catalog). `updatedAt`
 * follows what the partner sees: while the event waits it stays at the move to
 * `processing`, and `succeeded` shows from the event's publication on.
 */
function visibleProgress(run: RunProgress): {
  status: CatalogIngestStatusValue;
  updatedAt: Date;
} {
  const activating = run.status === 'succeeded' && run.event_pending;
  const status = activating ? 'processing' : run.status;
  let updatedAt = run.updated_at;
  if (activating) updatedAt = run.processing_at ?? run.updated_at;
  else if (status === 'succeeded' && run.event_published_at && run.event_published_at > updatedAt)
    updatedAt = run.event_published_at;
  return { status, updatedAt };
}

function toIngestStatus(run: IngestRunRow & RunProgress): CatalogIngestStatus {
  const { status, updatedAt } = visibleProgress(run);
  return {
    catalogIngestId: run.run_id,
    storeId: run.store_id,
    status,
    createdAt: run.created_at.toISOString(),
    updatedAt: updatedAt.toISOString(),
    errors: status === 'failed' ? run.errors : [],
    ...(status === 'succeeded' && run.summary ? { summary: run.summary } : {}),
  };
}

/** A run as a store's list shows it: its status resource's facts, its errors counted. */
function toIngestRun(
  run: RunProgress &
    Pick<IngestRunRow, 'run_id' | 'summary' | 'started_at' | 'created_at'> & {
      error_count: number;
    },
): CatalogIngestRun {
  const { status, updatedAt } = visibleProgress(run);
  const finished = status === 'succeeded' || status === 'failed';
  return {
    catalogIngestId: run.run_id,
    state: status,
    createdAt: run.created_at.toISOString(),
    ...(run.started_at ? { startedAt: run.started_at.toISOString() } : {}),
    ...(finished ? { finishedAt: updatedAt.toISOString() } : {}),
    ...(status === 'succeeded' && run.summary ? { changeSummary: run.summary } : {}),
    errorCount: status === 'failed' ? run.error_count : 0,
  };
}

export function ingestHandlers(deps: {
  db: Kysely<CatalogDatabase>;
  bus: BusClient;
  js: JetStreamClient;
  prefix: string;
  logger: Logger;
  metrics: IngestRunMetrics;
  /** Runs of one partner queued (not yet started) at once; a notification beyond is refused. */
  maxQueuedPerPartner: number;
}): HandlerBinding[] {
  return [
    handle(subjects.catalog.notify, async ({ storeId, callbackUrl }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      // The stores service answers 404 for another partner's store; that error passes through.
      const store = await deps.bus.request(subjects.stores.get, { storeId }, ctx);
      const recorded = await insertRun(
        deps.db,
        {
          runId: randomUUID(),
          storeId,
          partnerId,
          mode: requestMode(ctx),
          callbackUrl,
          currency: store.currency,
        },
        deps.maxQueuedPerPartner,
      );
      if (recorded.outcome === 'queue_full') {
        throw new AppError(
          'CATALOG_INGEST_QUEUE_FULL',
          `This partner already has ${deps.maxQueuedPerPartner} catalog ingests waiting to start; retry later`,
          { retryAfterSeconds: QUEUE_FULL_RETRY_AFTER_SECONDS },
        );
      }
      const { run, superseded } = recorded;
      for (const createdAt of superseded) deps.metrics.finished('superseded', createdAt);
      // The run is durable now; if this publish fails the reconciler publishes it later.
      try {
        await publishIngest(deps.js, deps.prefix, run.run_id);
        await markPublished(deps.db, run.run_id);
      } catch (error) {
        deps.logger.warn(
          { err: error, runId: run.run_id },
          'ingest publish failed; reconciler will retry',
        );
      }
      return { catalogIngestId: run.run_id, retryAfterSeconds: POLL_AFTER_SECONDS };
    }),

    handle(subjects.catalog.listIngests, async ({ storeId, limit, before }, ctx) => {
      const partnerId = requirePartner(ctx, 'commerce');
      const after = before === undefined ? undefined : decodeCursor(before, 'before');
      // 404 STORE_NOT_FOUND unless the store is the caller's, in the caller's mode.
      await deps.bus.request(subjects.stores.get, { storeId }, ctx);
      const page = await listStoreRuns(deps.db, {
        storeId,
        partnerId,
        limit,
        ...(after ? { after } : {}),
      });
      return {
        ingests: page.rows.map(toIngestRun),
        ...(page.next ? { nextCursor: encodeCursor(page.next) } : {}),
      };
    }),

    handle(subjects.catalog.status, async ({ storeId, catalogIngestId }, ctx) => {
      const run = await findPartnerRun(
        deps.db,
        catalogIngestId,
        storeId,
        requirePartner(ctx, 'commerce'),
      );
      if (!run)
        throw new AppError(
          'CATALOG_INGEST_NOT_FOUND',
          'No catalog ingest with that id exists for this store',
        );
      return toIngestStatus(run);
    }),
  ];
}
