import { z } from 'zod';

/** A stream's size limit in bytes: -1 (none) or at least 1 MiB. */
const byteLimit = z.coerce
  .number()
  .int()
  .refine((bytes) => bytes === -1 || (bytes >= 1024 * 1024 && Number.isSafeInteger(bytes)), {
    message: '-1 (no limit) or a number of bytes of at least 1048576',
  });

/**
 * NODE_ENV=production (the image sets it; local stacks override it) makes the production
 * requirements binding: a service refuses to start with a setting only a local run may use.
 */
export const nodeEnvSchema = z.string().optional();

export function isProduction(env: { readonly NODE_ENV?: string | undefined }): boolean {
  return env.NODE_ENV === 'production';
}

/**
 * Why production refuses this DATABASE_URL, or undefined: the connection must be encrypted and
 * verify the server's certificate and host name (sslmode=verify-full, the CA in sslrootcert).
 */
export function productionDatabaseUrlProblem(url: string): string | undefined {
  let sslmodes: string[];
  try {
    sslmodes = new URL(url).searchParams.getAll('sslmode');
  } catch {
    return 'not a URL (postgres://user:password@host:port/database?sslmode=verify-full&sslrootcert=…)';
  }
  if (sslmodes.length !== 1 || sslmodes[0] !== 'verify-full') {
    return (
      `production (NODE_ENV=production) requires sslmode=verify-full (got ${sslmodes.join(', ') || 'none'}), ` +
      "with sslrootcert naming the server's CA certificate"
    );
  }
  return undefined;
}

/** Environment every service reads (DEVELOPERS: services default to the local servers). */
export const baseEnvSchema = z
  .object({
    NODE_ENV: nodeEnvSchema,
    NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
    DATABASE_URL: z.string().min(1).default('postgres://postgres@127.0.0.1:5432/pcp'),
    REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
    /** Every subject and stream name starts with this, so deployments and test runs never mix. */
    NATS_SUBJECT_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only')
      .default('pcp'),
    NATS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(5_000),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    OPS_HOST: z.string().default('0.0.0.0'),
    /**
     * This process's NATS user and password (deployments: Secret `pcp-nats-<service>`). Both or
     * neither: without them the connection is anonymous, as local runs are.
     */
    NATS_USER: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only')
      .optional(),
    NATS_PASSWORD: z.string().min(1).optional(),
    /**
     * TLS to NATS (production): the CA file that signed the server's certificate; with it the
     * connection must be TLS (a `tls://` URL). NATS_TLS_CERT and NATS_TLS_KEY, a client
     * certificate, for servers that verify clients.
     */
    NATS_TLS_CA: z.string().min(1).optional(),
    NATS_TLS_CERT: z.string().min(1).optional(),
    NATS_TLS_KEY: z.string().min(1).optional(),
    /**
     * Replicas of the streams the JetStream topology creates (3 on a 3-node NATS cluster). Only
     * a stream's creation uses these and the limits below: a stream that exists keeps what it
     * has, so an operator's `nats stream edit` survives deploys.
     */
    JETSTREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
    /** Events (`<prefix>_events`): kept this long, within this size (-1: no size limit). */
    JETSTREAM_EVENTS_MAX_AGE_HOURS: z.coerce.number().int().min(1).max(87_600).default(168),
    JETSTREAM_EVENTS_MAX_BYTES: byteLimit.default(-1),
    /** Catalog ingest work (`<prefix>_catalog_ingest`). */
    JETSTREAM_INGEST_MAX_AGE_HOURS: z.coerce.number().int().min(1).max(87_600).default(168),
    JETSTREAM_INGEST_MAX_BYTES: byteLimit.default(-1),
    /** Dead letters (`<prefix>_dead_letters`), waiting for an operator. */
    JETSTREAM_DEAD_LETTERS_MAX_AGE_HOURS: z.coerce.number().int().min(1).max(87_600).default(720),
    JETSTREAM_DEAD_LETTERS_MAX_BYTES: byteLimit.default(1024 * 1024 * 1024),
  })
  .superRefine((env, context) => {
    if (!isProduction(env)) return;
    const problem = productionDatabaseUrlProblem(env.DATABASE_URL);
    if (problem) context.addIssue({ code: 'custom', path: ['DATABASE_URL'], message: problem });
  });
export type BaseEnv = z.output<typeof baseEnvSchema>;

/** The credentials `connectNats` takes, from NATS_USER and NATS_PASSWORD (both or neither). */
export function natsCredentials(
  env: Pick<BaseEnv, 'NATS_USER' | 'NATS_PASSWORD'>,
): { user: string; password: string } | undefined {
  if (env.NATS_USER === undefined && env.NATS_PASSWORD === undefined) return undefined;
  if (env.NATS_USER === undefined) {
    throw new Error('Invalid configuration:\n  NATS_USER: required when NATS_PASSWORD is set');
  }
  if (env.NATS_PASSWORD === undefined) {
    throw new Error('Invalid configuration:\n  NATS_PASSWORD: required when NATS_USER is set');
  }
  return { user: env.NATS_USER, password: env.NATS_PASSWORD };
}

/** The TLS files `connectNats` takes, from NATS_TLS_CA, NATS_TLS_CERT and NATS_TLS_KEY. */
export function natsTls(
  env: Pick<BaseEnv, 'NATS_TLS_CA' | 'NATS_TLS_CERT' | 'NATS_TLS_KEY'>,
): NatsTls | undefined {
  if ((env.NATS_TLS_CERT === undefined) !== (env.NATS_TLS_KEY === undefined)) {
    throw new Error('Invalid configuration:\n  NATS_TLS_CERT and NATS_TLS_KEY: both or neither');
  }
  if (env.NATS_TLS_CA === undefined && env.NATS_TLS_CERT === undefined) return undefined;
  return {
    ...(env.NATS_TLS_CA === undefined ? {} : { caFile: env.NATS_TLS_CA }),
    ...(env.NATS_TLS_CERT === undefined ? {} : { certFile: env.NATS_TLS_CERT }),
    ...(env.NATS_TLS_KEY === undefined ? {} : { keyFile: env.NATS_TLS_KEY }),
  };
}

/** TLS files of a NATS connection (nats.js reads them). */
export interface NatsTls {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** Size and age limits of one stream; -1 bytes is no size limit. */
export interface StreamLimits {
  readonly maxAgeMs: number;
  readonly maxBytes: number;
}

/** How the streams a service creates are configured (when it creates them). */
export interface JetStreamSettings {
  readonly replicas: number;
  readonly events: StreamLimits;
  readonly ingest: StreamLimits;
  readonly deadLetters: StreamLimits;
}

const HOUR_MS = 3_600_000;

/** The JetStream settings of a parsed environment. */
export function jetStreamSettings(
  env: Pick<BaseEnv, Extract<keyof BaseEnv, `JETSTREAM_${string}`>>,
): JetStreamSettings {
  return {
    replicas: env.JETSTREAM_REPLICAS,
    events: {
      maxAgeMs: env.JETSTREAM_EVENTS_MAX_AGE_HOURS * HOUR_MS,
      maxBytes: env.JETSTREAM_EVENTS_MAX_BYTES,
    },
    ingest: {
      maxAgeMs: env.JETSTREAM_INGEST_MAX_AGE_HOURS * HOUR_MS,
      maxBytes: env.JETSTREAM_INGEST_MAX_BYTES,
    },
    deadLetters: {
      maxAgeMs: env.JETSTREAM_DEAD_LETTERS_MAX_AGE_HOURS * HOUR_MS,
      maxBytes: env.JETSTREAM_DEAD_LETTERS_MAX_BYTES,
    },
  };
}

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

/** Those of an environment that sets none (one replica; the limits above). */
export const defaultJetStreamSettings: JetStreamSettings = Object.freeze(
  jetStreamSettings(baseEnvSchema.parse({})),
);
