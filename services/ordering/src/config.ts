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
});
export type OrderingConfig = z.output<typeof orderingEnvSchema>;
