import type { Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import type { CatalogDatabase } from '../db/catalog.table.js';
import { waitingRunsToWake } from '../db/ingest-run.repository.js';
import { publishIngest } from './ingest-message.js';

/**
 * Publish wake-ups for the fair queue's first waiting runs (one per partner with a free
 * slot, `limit` at most): each lets a worker claim the queue's first run. Called when a run
 * lets go of its slot (limit 1: one slot freed) and by the reconciler for runs waiting
 * longer than `waitingLongerThanMs`. Returns how many were published.
 */
export async function wakeWaitingRuns(
  deps: {
    db: Kysely<CatalogDatabase>;
    js: JetStreamClient;
    prefix: string;
    maxRunsPerPartner: number;
  },
  options: { limit: number; waitingLongerThanMs?: number },
): Promise<number> {
  const runIds = await waitingRunsToWake(deps.db, deps.maxRunsPerPartner, options);
  for (const runId of runIds) {
    // A fresh message id: the run's first message may be within the duplicate window.
    await publishIngest(deps.js, deps.prefix, runId, `${runId}:wake:${Date.now()}`);
  }
  return runIds.length;
}
