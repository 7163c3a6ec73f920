import { z } from 'zod';

/** The simulator's environment, read by main.ts. */
export const processorSimulatorEnvSchema = z
  .object({
    NODE_ENV: z.string().optional(),
    PORT: z.coerce.number().int().min(0).max(65_535).default(4010),
    HOST: z.string().min(1).default('127.0.0.1'),
    PROCESSOR_API_KEY: z.string().min(1).default('sk_test_simulator'),
    PROCESSOR_LATENCY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
    /** The folder its state is kept in; unset: in memory, forgotten when it stops. */
    PROCESSOR_DATA_DIR: z.string().min(1).optional(),
    /**
     * The key of card fingerprints, from a Secret: never written to PROCESSOR_DATA_DIR, so the
     * saved state alone cannot be searched for a card number. Unset: a random key, saved with the
     * state (local runs); production refuses that with a data folder.
     */
    PROCESSOR_FINGERPRINT_KEY: z.string().min(32).optional(),
  })
  .superRefine((env, context) => {
    if (
      env.NODE_ENV === 'production' &&
      env.PROCESSOR_DATA_DIR !== undefined &&
      env.PROCESSOR_FINGERPRINT_KEY === undefined
    ) {
      context.addIssue({
        code: 'custom',
        path: ['PROCESSOR_FINGERPRINT_KEY'],
        message:
          'production (NODE_ENV=production) keeps the fingerprint key out of the data folder',
      });
    }
  });
