import { Histogram, type Registry } from 'prom-client';

/**
 * How a run ended: `succeeded` (activated), `superseded` (a later notification for the store
 * won, before or after the download), `invalid` (the document was rejected), `download_failed`
 * (the callbackUrl could not be fetched) or `gave_up` (our side failed it: attempts exhausted,
 * or the document exhausted a preparation thread).
 */
export type IngestRunOutcome =
  'succeeded' | 'superseded' | 'invalid' | 'download_failed' | 'gave_up';

export interface IngestRunMetrics {
  /** A run reached its terminal state; `createdAt` is when its notification was accepted. */
  finished(outcome: IngestRunOutcome, createdAt: Date): void;
}

export function createIngestRunMetrics(registry: Registry): IngestRunMetrics {
  const duration = new Histogram({
    name: 'pcp_catalog_ingest_run_duration_seconds',
    help: 'Ingest runs by outcome (succeeded, superseded, invalid, download_failed, gave_up), from the notification to the terminal state',
    labelNames: ['outcome'] as const,
    buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1_800, 3_600, 7_200],
    registers: [registry],
  });
  return {
    finished(outcome, createdAt) {
      // The database's clock stamped createdAt; a skew must not make a negative duration.
      duration.observe({ outcome }, Math.max(0, Date.now() - createdAt.getTime()) / 1000);
    },
  };
}
