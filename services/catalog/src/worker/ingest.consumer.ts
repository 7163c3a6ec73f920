import { events, type CatalogIngestError } from '@pcp/contracts';
import {
  tryParseJson,
  type ConsumerWork,
  type HandlerOutcome,
  type Logger,
  type OutboxRelay,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JetStreamClient, JsMsg } from 'nats';
import { activateCatalog } from '../db/catalog.repository.js';
import type { CatalogDatabase, IngestRunRow } from '../db/catalog.table.js';
import { claimRun, extendLease, releaseLease, transitionRun } from '../db/ingest-run.repository.js';
import { downloadCatalogSet, type CatalogFetchSettings } from './download-catalog.js';
import { ingestMessage } from './ingest-message.js';
import type { IngestRunMetrics, IngestRunOutcome } from './ingest-metrics.js';
import type { CatalogPreparationPool } from './prepare-catalog.pool.js';
import type { PrepareCatalogResult } from './prepare-catalog.task.js';
import { wakeWaitingRuns } from './waiting-runs.js';

export interface IngestWorkerDeps {
  db: Kysely<CatalogDatabase>;
  js: JetStreamClient;
  relay: OutboxRelay;
  preparation: CatalogPreparationPool;
  logger: Logger;
  prefix: string;
  workerId: string;
  leaseMs: number;
  maxAttempts: number;
  /** Runs of one partner in progress at once, across every replica. */
  maxRunsPerPartner: number;
  fetch: CatalogFetchSettings;
  metrics: IngestRunMetrics;
}

/** The worker lost its claim (it stalled past the lease and another worker took over). */
class LeaseLost extends Error {}

const failure = (message: string, path = ''): CatalogIngestError[] => [{ message, path }];

const contactSupport = (runId: string) =>
  failure(`The catalog could not be processed; contact support quoting catalogIngestId ${runId}`);

/**
 * Handles one work message: a wake-up that claims the fair queue's first run. Terminal outcomes are written before the ack, so a crash at any
 * point leaves the run claimable again (lease lapses, JetStream redelivers or the reconciler
 * re-publishes) and no run stays unfinished.
 */
export function createIngestHandler(deps: IngestWorkerDeps) {
  const { db, workerId, leaseMs, logger } = deps;

  return async function handleIngest(msg: JsMsg, work: ConsumerWork): Promise<HandlerOutcome> {
    const parsed = ingestMessage.safeParse(tryParseJson(msg.data));
    if (!parsed.success) return { deadLetter: 'not an ingest message' };
    const { runId } = parsed.data;
    const claim = await claimRun(db, {
      runId,
      workerId,
      leaseMs,
      maxRunsPerPartner: deps.maxRunsPerPartner,
    });
    switch (claim.outcome) {
      case 'missing':
        return { deadLetter: 'no such ingest run' };
      case 'finished':
        return;
      case 'waiting':
        // Every waiting run's partner is at its cap: the runs wait in Postgres (the message
        // acked, so it holds no max_ack_pending slot) until a run lets go of its slot.
        logger.debug({ runId }, 'no run claimable; waiting in the fair queue');
        return;
      case 'held': {
        // Another worker holds it; look again after its lease would lapse.
        return {
          retryInMs: Math.max(1_000, claim.leaseExpiresAt.getTime() - Date.now() + 1_000),
        };
      }
      case 'claimed':
        break;
    }
    // The fair queue's first run: maybe another than the message named (of another partner).
    const { run } = claim;
    try {
      await carryOut(run, work);
    } finally {
      // This run no longer holds a slot (finished, released or taken over): the next
      // waiting run may start.
      await wakeNext();
    }
  };

  /** Should this fail, the reconciler wakes the waiting runs later. */
  async function wakeNext(): Promise<void> {
    await wakeWaitingRuns(deps, { limit: 1 }).catch((error: unknown) =>
      logger.warn({ err: error }, 'waking a waiting run failed'),
    );
  }

  /** Settles the run, or throws to have the message retried after its backoff. */
  async function carryOut(run: IngestRunRow, work: ConsumerWork): Promise<void> {
    const runId = run.run_id;
    const log = logger.child({ runId, storeId: run.store_id, attempt: run.attempts });
    if (run.attempts > deps.maxAttempts) {
      if (await transitionRun(db, runId, workerId, 'failed', contactSupport(runId))) {
        deps.metrics.finished('gave_up', run.created_at);
      }
      log.error('ingest failed after the maximum number of attempts');
      return;
    }

    let leaseLost = false;
    const heartbeat = setInterval(
      () => {
        work.working();
        extendLease(db, runId, workerId, leaseMs).then(
          (held) => (leaseLost ||= !held),
          (error: unknown) => log.warn({ err: error }, 'lease renewal failed'),
        );
      },
      Math.max(1_000, leaseMs / 3),
    );
    const ensureLease = () => {
      if (leaseLost) throw new LeaseLost();
      // Timed out or handed back at shutdown: stop here and free the run at once.
      work.signal.throwIfAborted();
    };
    try {
      await ingest(run, log, ensureLease, work);
    } catch (error) {
      if (error instanceof LeaseLost) {
        log.warn('lost the lease; another worker carries the run');
        return;
      }
      log.warn({ err: error }, 'ingest attempt failed; will retry');
      await releaseLease(db, runId, workerId).catch(() => undefined);
      throw error;
    } finally {
      clearInterval(heartbeat);
    }
  }

  async function move(
    run: IngestRunRow,
    status: 'processing' | 'failed',
    errors: CatalogIngestError[] = [],
  ) {
    if (!(await transitionRun(db, run.run_id, workerId, status, errors))) throw new LeaseLost();
  }

  async function fail(run: IngestRunRow, outcome: IngestRunOutcome, errors: CatalogIngestError[]) {
    await move(run, 'failed', errors);
    deps.metrics.finished(outcome, run.created_at);
  }

  async function ingest(
    run: IngestRunRow,
    log: Logger,
    ensureLease: () => void,
    work: ConsumerWork,
  ): Promise<void> {
    let lastProgress = 0;
    const download = await downloadCatalogSet(run.callback_url, deps.fetch, {
      signal: work.signal,
      onProgress: () => {
        // Long downloads tell JetStream they are alive, at most once a second.
        if (Date.now() - lastProgress > 1_000) {
          lastProgress = Date.now();
          work.working();
        }
      },
    });
    ensureLease();
    if (!download.ok) {
      // The partner's message may hide the kind (a DNS failure reads as a private address).
      log.info({ failure: download.failure }, 'callbackUrl download failed');
      return fail(run, 'download_failed', failure(download.message));
    }

    // The run shows `processing` as soon as the bytes parse, while validation goes on.
    let processing: Promise<void> | undefined;
    const enterProcessing = () => {
      if (!processing) {
        processing = move(run, 'processing');
        // Awaited below; until then a rejection (lease lost) must not count as unhandled.
        processing.catch(() => undefined);
      }
      return processing;
    };
    let prepared: PrepareCatalogResult;
    try {
      prepared = await deps.preparation.prepare(
        download.body,
        { storeId: run.store_id, catalogIngestId: run.run_id, currency: run.currency },
        () => void enterProcessing(),
      );
    } catch (error) {
      // Deterministic for this document: another attempt would run out of memory again.
      if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        log.error({ err: error }, 'the document exhausted a preparation thread’s heap');
        await processing?.catch(() => undefined);
        return fail(run, 'gave_up', contactSupport(run.run_id));
      }
      throw error;
    }
    if (prepared.outcome === 'invalid_json') {
      ensureLease();
      return fail(run, 'invalid', failure(prepared.message));
    }
    // The thread's note that the bytes parsed may arrive after its result.
    await enterProcessing();
    ensureLease();
    if (prepared.outcome === 'invalid') return fail(run, 'invalid', prepared.errors);

    const activation = await activateCatalog(db, {
      run,
      workerId,
      catalog: prepared.catalog,
      eventSubject: `${deps.prefix}.${events.catalogActivated.subject}`,
    });
    switch (activation.outcome) {
      case 'lease_lost':
        throw new LeaseLost();
      case 'superseded':
        return fail(
          run,
          'superseded',
          failure(
            'A later notification for this store was applied first; this CatalogSet was not activated',
          ),
        );
      case 'activated':
        deps.metrics.finished('succeeded', run.created_at);
        void deps.relay.nudge();
        return;
    }
  }
}
