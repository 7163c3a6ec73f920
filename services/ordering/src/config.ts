import { z } from 'zod';

export const orderingEnvSchema = z.object({
  /**
   * Memory for compiled catalogs (LRU, estimated bytes): the working set of stores whose
   * carts are priced from memory. A catalog of 10k items takes about 8 MB.
   */
  ORDERING_CATALOG_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .max(64 * 1024 ** 3)
    .default(256 * 1024 * 1024),
  /**
   * How long a place attempt holds its Idempotency-Key without renewing it (it renews every
   * third of this while it runs). A replica that dies mid-place is taken over this long after.
   */
  ORDERING_PLACE_LEASE_MS: z.coerce.number().int().min(500).max(300_000).default(15_000),
  /** How long a place outcome is replayed for its key (contract §8: 24 hours). */
  ORDERING_IDEMPOTENCY_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(24 * 3_600_000),
  /**
   * How long place waits for payments to authorize or capture: longer than the payment
   * processor's own timeout (10 s), so its answer (503, retryable) arrives first.
   */
  ORDERING_PAYMENTS_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(12_000),
  /**
   * Test-only: end the process (SIGKILL) right after place commits this recovery point, so
   * crash tests can kill a real process at an exact step. Never set in a deployment.
   */
  ORDERING_FAILPOINT: z
    .enum(['validated', 'authorized', 'submitted', 'captured', 'recorded'])
    .optional(),
  /** POST orders to stores' submission URLs over plain http too (local runs, tests). */
  ORDERING_SUBMISSION_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
  /** Private hosts submission URLs may reach (on-premise stores, tests): CIDRs and hostnames. */
  ORDERING_SUBMISSION_ALLOWLIST: z.string().default(''),
  /** How long place waits for a store to answer an order submission before it is unavailable. */
  ORDERING_SUBMISSION_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** How long a store's submission URL has to accept a connection. */
  ORDERING_SUBMISSION_CONNECT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(2_000),
});
export type OrderingConfig = z.output<typeof orderingEnvSchema>;
