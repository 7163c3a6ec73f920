import { z } from 'zod';

/** The simulator's environment, read by main.ts. */
export const processorSimulatorEnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(4010),
  HOST: z.string().min(1).default('127.0.0.1'),
  PROCESSOR_API_KEY: z.string().min(1).default('sk_test_simulator'),
  PROCESSOR_LATENCY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
  /** The folder its state is kept in; unset: in memory, forgotten when it stops. */
  PROCESSOR_DATA_DIR: z.string().min(1).optional(),
});
