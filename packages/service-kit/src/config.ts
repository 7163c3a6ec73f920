import { z } from 'zod';

/** Environment every service reads (DEVELOPERS: services default to the local servers). */
export const baseEnvSchema = z.object({
  NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  DATABASE_URL: z.string().min(1).default('postgres://postgres@127.0.0.1:5432/pcp'),
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
  /** Every subject and stream name starts with this, so deployments and test runs never mix. */
  NATS_SUBJECT_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only')
    .default('pcp'),
  NATS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(5_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  OPS_HOST: z.string().default('0.0.0.0'),
});
export type BaseEnv = z.output<typeof baseEnvSchema>;

/**
 * Parse the environment once, at boot, and freeze it. A bad value stops the process with a
 * message naming the variable.
 */
export function loadConfig<T extends z.ZodType<object>>(
  schema: T,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.output<T>> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map(
      (issue) => `${issue.path.map(String).join('.') || '(env)'}: ${issue.message}`,
    );
    throw new Error(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return Object.freeze(result.data);
}
