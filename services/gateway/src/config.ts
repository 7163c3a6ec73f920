import { gatewayDefaultPort, platformOpsPorts } from '@pcp/contracts';
import { baseEnvSchema } from '@pcp/service-kit';
import { z } from 'zod';

const perMinute = z.coerce.number().int().min(1).max(1_000_000);
const cacheEntries = z.coerce.number().int().min(1).max(1_000_000);

export const gatewayEnvSchema = baseEnvSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65_535).default(gatewayDefaultPort),
  HOST: z.string().default('0.0.0.0'),
  /** Where partners reach the gateway; the default suits a local run. */
  PUBLIC_BASE_URL: z.url().optional(),
  /** Base of ProblemDetail `type` URIs: `{DOCS_URL}/errors/<errorCode>`. */
  DOCS_URL: z.url().optional(),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(50 * 1024 * 1024)
    .default(1024 * 1024),
  /** Trust X-Forwarded-* from proxies: `true`, `false`, or a comma-separated list of addresses/CIDRs. */
  TRUST_PROXY: z.string().default('false'),
  RATE_LIMIT_READS_PER_MIN: perMinute.default(1_000),
  RATE_LIMIT_WRITES_PER_MIN: perMinute.default(100),
  RATE_LIMIT_DISCOVERY_PER_MIN: perMinute.default(60),
  /** Redis keys of this deployment (rate-limit counters) start with this. */
  REDIS_KEY_PREFIX: z.string().max(64).default('pcp:'),
  /** How long a verified API key (or an unknown key id) is remembered; 0 turns caching off. */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(300_000).default(10_000),
  /** Verified keys remembered per replica (least recently used go first). */
  AUTH_CACHE_MAX_KEYS: cacheEntries.default(10_000),
  /** Unknown key ids remembered per replica, apart from the verified keys they cannot evict. */
  AUTH_CACHE_MAX_UNKNOWN_KEYS: cacheEntries.default(10_000),
  /** Failed authentications one client address may make per minute before it gets 429s. */
  AUTH_FAILURES_PER_MIN_PER_IP: perMinute.default(30),
  /** A console session unused this long ends (docs/guide/authentication.md#console-sessions). */
  SESSION_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(3_600_000),
  /** A console session ends this long after sign-in, however used. */
  SESSION_MAX_AGE_MS: z.coerce.number().int().min(1_000).max(604_800_000).default(43_200_000),
  /** Active console sessions per partner and mode; a new one past it ends the oldest. */
  SESSIONS_PER_PARTNER: z.coerce.number().int().min(1).max(1_000).default(20),
  /** Console sessions remembered per replica (each for at most AUTH_CACHE_TTL_MS). */
  SESSION_CACHE_MAX: cacheEntries.default(10_000),
  /**
   * How long a payments request (vaulting a card) may take: longer than the payments
   * service's PAYMENT_PROCESSOR_TIMEOUT_MS (10 s), so its 503 arrives rather than a 504.
   */
  PAYMENTS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(12_000),
  /**
   * How long place may take: authorizing (the processor's 10 s at worst), submitting to the
   * store (5 s) and capturing. A place cut off here answers 504 and its key resumes.
   */
  ORDERING_PLACE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(30_000),
  /**
   * How long a catalog dry run (catalogset-validation) may take: longer than the catalog
   * service's CATALOG_FETCH_TIMEOUT_MS (60 s) plus a validation (a few seconds, after waiting
   * for a preparation thread), so its answer arrives rather than a 504.
   */
  CATALOG_VALIDATION_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(90_000),
  /** Test-mode webhook streams one partner may hold open at once, across every replica. */
  WEBHOOK_STREAMS_PER_PARTNER: z.coerce.number().int().min(1).max(100).default(5),
  /** How often a quiet webhook stream gets a comment line (and its log is read again). */
  WEBHOOK_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /**
   * Live event streams (docs/guide/live-events.md) one partner may hold open at once, across
   * its live and test modes and every replica.
   */
  LIVE_STREAMS_PER_PARTNER: z.coerce.number().int().min(1).max(100).default(10),
  /** How often a quiet live event stream gets a comment line. */
  LIVE_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** Bytes a live stream may have waiting for a slow client; past them it is dropped. */
  LIVE_STREAM_MAX_QUEUED_BYTES: z.coerce
    .number()
    .int()
    .min(16 * 1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  /** An event stream (live or webhook) ends this long after it opened; the client reconnects. */
  STREAM_MAX_AGE_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(3_600_000),
  /**
   * How often each open event stream is checked again (its key or session still valid, its
   * store still there) and its place under the cap renewed: the longest a stream outlives
   * its authority when the message that should have ended it at once is lost.
   */
  STREAM_RECHECK_INTERVAL_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
  /** Days the request log keeps a request (docs/guide/requests.md#retention). */
  REQUEST_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /** Requests the log keeps per tenant (a partner's live or test mode): the newest. */
  REQUEST_LOG_MAX_PER_PARTNER: z.coerce.number().int().min(1).max(10_000_000).default(50_000),
  /** How often a replica deletes requests past the retention (the cap is kept by each write). */
  REQUEST_LOG_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(86_400_000).default(300_000),
  /** How often a replica writes the requests it answered (one INSERT per 500). */
  REQUEST_LOG_FLUSH_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  /**
   * Requests a replica holds unwritten at most; past it a tenant's own oldest are dropped (and
   * counted), or the new one of a tenant with none held.
   */
  REQUEST_LOG_BUFFER_MAX_ROWS: z.coerce.number().int().min(1).max(1_000_000).default(20_000),
  /** Of those, the most one tenant holds: past it, that tenant's oldest are dropped. */
  REQUEST_LOG_BUFFER_MAX_ROWS_PER_PARTNER: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(2_000),
  /** Port of /health/ready and /metrics, off the public port (host: OPS_HOST). */
  OPS_PORT: z.coerce.number().int().min(0).max(65_535).default(platformOpsPorts.gateway),
  /**
   * On SIGTERM, how long the gateway keeps serving while unready (answering `Connection:
   * close`) before it closes its port, so load balancers that poll readiness take it out
   * first. Added to SHUTDOWN_TIMEOUT_MS, which starts after it.
   */
  SHUTDOWN_UNREADY_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  MIGRATE_ON_START: z.enum(['true', 'false']).default('true'),
});
export type GatewayConfig = z.output<typeof gatewayEnvSchema>;

export function parseTrustProxy(value: string): boolean | string[] {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return value.split(',').map((entry) => entry.trim());
}
