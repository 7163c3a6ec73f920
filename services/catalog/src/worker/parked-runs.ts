import type { Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import type { CatalogDatabase } from '../db/catalog.table.js';
import { unparkRuns } from '../db/ingest-run.repository.js';
import { publishIngest } from './ingest-message.js';

/**
 * Publish the work of a partner's oldest parked runs, as many as the partner has free slots
 * under its cap; the runs that were parked ask again. Called when a run lets go of its slot
 * and by the reconciler. Returns how many were published.
 */
export async function releaseParkedRuns(
  deps: {
    db: Kysely<CatalogDatabase>;
    js: JetStreamClient;
    prefix: string;
    maxRunsPerPartner: number;
  },
  partnerId: string,
): Promise<number> {
  const runIds = await unparkRuns(deps.db, partnerId, deps.maxRunsPerPartner);
  for (const runId of runIds) {
    // A fresh message id: the run's first message may be within the duplicate window.
    await publishIngest(deps.js, deps.prefix, runId, `${runId}:unparked:${Date.now()}`);
  }
  return runIds.length;
}
