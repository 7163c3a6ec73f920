import { DEFAULT_INGEST_LEASE_MS } from '@pcp/service-kit';
import { z } from 'zod';

const milliseconds = (fallback: number) =>
  z.coerce.number().int().min(1).max(3_600_000).default(fallback);

export const catalogEnvSchema = z.object({
  /** Download over plain http too (local runs, tests); production partners use https. */
  CATALOG_FETCH_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
  /** Private hosts an operator admits (on-premise partners, tests): CIDRs and hostnames. */
  CATALOG_FETCH_ALLOWLIST: z.string().default(''),
  CATALOG_FETCH_TIMEOUT_MS: milliseconds(60_000),
  CATALOG_FETCH_CONNECT_TIMEOUT_MS: milliseconds(5_000),
  /**
   * Slowest average download (bytes per second since the request) tolerated once
   * CATALOG_INGEST_MIN_RATE_GRACE_MS has passed; slower fails the run (or dry run), so a
   * callback that drips its document frees its slot in seconds, not at the fetch timeout.
   * 50 MB, the largest document, at this rate would outlast the timeout anyway.
   */
  CATALOG_INGEST_MIN_BYTES_PER_SEC: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_073_741_824)
    .default(16_384),
  CATALOG_INGEST_MIN_RATE_GRACE_MS: milliseconds(5_000),
  /**
   * Runs one replica works on at once (each holds a document in memory); also the threads
   * that parse and validate documents off the request loop.
   */
  CATALOG_INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(2),
  /**
   * Runs of one partner in progress at once across every replica; more wait their turn. A
   * share well below the total (production: 2 replicas × 2 = 4 slots, a quarter each), so a
   * few partners with slow callbacks cannot hold every slot.
   */
  CATALOG_INGEST_MAX_RUNS_PER_PARTNER: z.coerce.number().int().min(1).max(1_000).default(1),
  /**
   * Runs of one partner queued (not yet started) at once. A store has at most one (a later
   * notification supersedes it); a notification beyond is refused with 429
   * CATALOG_INGEST_QUEUE_FULL, so one partner's backlog stays bounded.
   */
  CATALOG_INGEST_MAX_QUEUED_PER_PARTNER: z.coerce.number().int().min(1).max(100_000).default(50),
  /**
   * Old-generation heap of each preparation thread: a document that needs more fails its run
   * instead of growing the process. A 100k-item, 43 MB document validates in 192 MB; this is
   * twice that, and what the pod's memory limit is sized by (deploy/k8s/README.md).
   */
  CATALOG_INGEST_THREAD_HEAP_MB: z.coerce.number().int().min(64).max(16_384).default(384),
  /**
   * Dry runs (catalogset-validation) one replica works on at once; each holds its document
   * (up to 50 MB) while it waits for a preparation thread. Beyond it: 503 with Retry-After.
   * Four times a partner's share, so two busy partners leave room for others.
   */
  CATALOG_VALIDATION_MAX_IN_PROGRESS: z.coerce.number().int().min(1).max(64).default(4),
  /** Dry runs of one partner on one replica at once. Beyond it: 429 with Retry-After. */
  CATALOG_VALIDATION_MAX_PER_PARTNER: z.coerce.number().int().min(1).max(64).default(1),
  /** A worker's claim on a run; heartbeats renew it, a crash lets it lapse. */
  CATALOG_INGEST_LEASE_MS: milliseconds(DEFAULT_INGEST_LEASE_MS),
  /** Claims of one run before it is failed rather than retried again. */
  CATALOG_INGEST_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /** Reconciler sweeps: re-publishing orphaned runs, waking waiting ones, pruning old ones. */
  CATALOG_RECONCILE_INTERVAL_MS: milliseconds(10_000),
  /**
   * Days a finished run (its status resource) is kept; older ones are pruned, except each
   * store's latest run and any run an active catalog came from.
   */
  CATALOG_INGEST_RUN_RETENTION_DAYS: z.coerce.number().int().min(1).max(3_650).default(30),
  /** Memory for document chunks kept to serve reads (LRU by bytes). */
  CATALOG_DOCUMENT_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(16 * 1024 ** 3)
    .default(64 * 1024 * 1024),
});
export type CatalogConfig = z.output<typeof catalogEnvSchema>;
