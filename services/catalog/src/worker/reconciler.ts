import type { Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import type { CatalogDatabase } from '../db/catalog.table.js';
import {
  findOrphanedRuns,
  findPartnersWithParkedRuns,
  markPublished,
} from '../db/ingest-run.repository.js';
import { publishIngest } from './ingest-message.js';
import { releaseParkedRuns } from './parked-runs.js';

/**
 * Finds unfinished runs nobody works on (a publish that failed after the 202, a worker that
 * died after JetStream gave up redelivering) and publishes their work again, and releases
 * parked runs of partners with a free slot whose release was lost (the worker that freed the
 * slot died). Any replica may run it; a duplicate message is harmless.
 */
export function createReconciler(deps: {
  db: Kysely<CatalogDatabase>;
  js: JetStreamClient;
  prefix: string;
  logger: Logger;
  intervalMs: number;
  staleAfterMs: number;
  maxRunsPerPartner: number;
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
    let released = 0;
    const partners = await findPartnersWithParkedRuns(
      deps.db,
      deps.staleAfterMs,
      deps.maxRunsPerPartner,
    );
    for (const partnerId of partners) {
      const count = await releaseParkedRuns(deps, partnerId);
      if (count > 0) deps.logger.warn({ partnerId, count }, 'released parked ingest runs');
      released += count;
    }
    return runs.length + released;
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
