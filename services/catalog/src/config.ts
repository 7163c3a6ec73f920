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
   * Runs one replica works on at once (each holds a document in memory); also the threads
   * that parse and validate documents off the request loop.
   */
  CATALOG_INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(2),
  /** Runs of one partner in progress at once across every replica; more wait their turn. */
  CATALOG_INGEST_MAX_RUNS_PER_PARTNER: z.coerce.number().int().min(1).max(1_000).default(2),
  /**
   * Old-generation heap of each preparation thread: a document that needs more fails its run
   * instead of growing the process. A 100k-item, 43 MB document validates in 192 MB; this is
   * twice that, and what the pod's memory limit is sized by (deploy/k8s/README.md).
   */
  CATALOG_INGEST_THREAD_HEAP_MB: z.coerce.number().int().min(64).max(16_384).default(384),
  /**
   * Dry runs (catalogset-validation) one replica works on at once; each holds its document
   * while it waits for a preparation thread. Beyond it: 503 with Retry-After.
   */
  CATALOG_VALIDATION_MAX_IN_PROGRESS: z.coerce.number().int().min(1).max(64).default(2),
  /** Dry runs of one partner on one replica at once. Beyond it: 429 with Retry-After. */
  CATALOG_VALIDATION_MAX_PER_PARTNER: z.coerce.number().int().min(1).max(64).default(1),
  /** A worker's claim on a run; heartbeats renew it, a crash lets it lapse. */
  CATALOG_INGEST_LEASE_MS: milliseconds(DEFAULT_INGEST_LEASE_MS),
  /** Claims of one run before it is failed rather than retried again. */
  CATALOG_INGEST_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  CATALOG_RECONCILE_INTERVAL_MS: milliseconds(10_000),
  /** Memory for document chunks kept to serve reads (LRU by bytes). */
  CATALOG_DOCUMENT_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(16 * 1024 ** 3)
    .default(64 * 1024 * 1024),
});
export type CatalogConfig = z.output<typeof catalogEnvSchema>;
