import { z } from 'zod';

export const storesEnvSchema = z.object({
  /**
   * Stores one commerce partner may hold; creating one more is 409 STORE_LIMIT_REACHED
   * (replacing an existing store's profile still works). Bounds what discovery searches.
   */
  STORES_MAX_PER_PARTNER: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  /**
   * With a scheduledTime, discovery examines at most this many of the nearest matching
   * stores for opening hours: the search's bound, as 50 km is pickup's. The default serves
   * the deepest page the contract allows (offset 10,000) where half of them are open.
   */
  STORES_DISCOVERY_SCAN_CAP: z.coerce.number().int().min(1_000).max(200_000).default(20_000),
  /** How long a store's previous order submission secret keeps signing after a rotation. */
  STORES_SUBMISSION_SECRET_OVERLAP_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 86_400_000)
    .default(86_400_000),
  /**
   * Memory for the rows `stores.v1.lookup` answers from (LRU, bytes): a row counts its JSON
   * and 1 KiB, about 2 KiB for a store with weekly hours, so the default holds ~30,000 stores.
   */
  STORES_ROW_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(4 * 1024 ** 3)
    .default(64 * 1024 * 1024),
  /**
   * How long a cached row may answer: the bound on seeing another replica's write that sent
   * no store event (a profile change) or whose event was missed. Its own writes and store
   * events drop the row at once.
   */
  STORES_ROW_CACHE_TTL_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
  /**
   * Between two occasional store events of the fixture stores
   * (docs/guide/sandbox.md#store-events): one store goes busy or pauses for a minute, or runs out
   * of an item for five.
   */
  STORES_FIXTURE_EVENT_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(86_400_000)
    .default(600_000),
});
export type StoresConfig = z.output<typeof storesEnvSchema>;
