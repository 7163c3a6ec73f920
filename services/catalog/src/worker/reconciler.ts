import type { Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import type { CatalogDatabase } from '../db/catalog.table.js';
import { findOrphanedRuns, markPublished, pruneFinishedRuns } from '../db/ingest-run.repository.js';
import { publishIngest } from './ingest-message.js';
import { wakeWaitingRuns } from './waiting-runs.js';

/**
 * Every interval: finds unfinished runs nobody works on (a publish that failed after the 202, a worker that
 * died after JetStream gave up redelivering) and publishes their work again, and wakes runs
 * long waiting whose partner has a free slot (the wake-up was lost: the worker that freed the
 * slot died, or a publish failed), then prunes finished runs past their retention. Any
 * replica may run it; a duplicate message is harmless.
 */
export function createReconciler(deps: {
  db: Kysely<CatalogDatabase>;
  js: JetStreamClient;
  prefix: string;
  logger: Logger;
  intervalMs: number;
  staleAfterMs: number;
  maxRunsPerPartner: number;
  runRetentionDays: number;
}) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  /** How many runs it published. */
  async function reconcile(): Promise<number> {
    const runs = await findOrphanedRuns(deps.db, deps.staleAfterMs);
    for (const run of runs) {
      // A fresh message id: the original may be past JetStream's duplicate window or gone.
      await publishIngest(deps.js, deps.prefix, run.run_id, `${run.run_id}:${Date.now()}`);
      await markPublished(deps.db, run.run_id);
      deps.logger.warn(
        { runId: run.run_id, status: run.status },
        're-published an orphaned ingest run',
      );
    }
    const woken = await wakeWaitingRuns(deps, {
      limit: 100,
      waitingLongerThanMs: deps.staleAfterMs,
    });
    if (woken > 0) deps.logger.warn({ count: woken }, 'woke long-waiting ingest runs');
    return runs.length + woken;
  }

  /** Finished runs past the retention go, a batch per sweep. How many were deleted. */
  async function prune(): Promise<number> {
    const pruned = await pruneFinishedRuns(deps.db, deps.runRetentionDays);
    if (pruned > 0) deps.logger.info({ count: pruned }, 'pruned finished ingest runs');
    return pruned;
  }

  return {
    reconcile,
    prune,
    start() {
      timer = setInterval(() => {
        running ??= reconcile()
          .then(prune)
          .then(() => undefined)
          .catch((error: unknown) => deps.logger.warn({ err: error }, 'reconcile failed'))
          .finally(() => (running = undefined));
      }, deps.intervalMs);
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
