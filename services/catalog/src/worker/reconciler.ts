import type { Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import type { CatalogDatabase } from '../db/catalog.table.js';
import { findOrphanedRuns, markPublished } from '../db/ingest-run.repository.js';
import { publishIngest } from './ingest-message.js';

/**
 * Finds unfinished runs nobody works on (a publish that failed after the 202, a worker that
 * died after JetStream gave up redelivering) and publishes their work again. Any replica
 * may run it; a duplicate message is harmless.
 */
export function createReconciler(deps: {
  db: Kysely<CatalogDatabase>;
  js: JetStreamClient;
  prefix: string;
  logger: Logger;
  intervalMs: number;
  staleAfterMs: number;
}) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

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
    return runs.length;
  }

  return {
    reconcile,
    start() {
      timer = setInterval(() => {
        running ??= reconcile()
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
