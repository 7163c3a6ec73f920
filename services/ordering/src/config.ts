import { maxAddressesPerEndUser } from '@pcp/contracts';
import { isProduction, nodeEnvSchema } from '@pcp/service-kit';
import { z } from 'zod';
import { orderingMutants } from './mutants.js';
import { CONTRACT_RETRY_SCHEDULE_MS, parseRetrySchedule } from './webhooks/retry-schedule.js';

export type { OrderingMutant } from './mutants.js';

export const orderingEnvSchema = z
  .object({
    NODE_ENV: nodeEnvSchema,
    /**
     * Memory for compiled catalogs (LRU, bytes): the working set of stores whose carts are
     * priced from memory. A compiled catalog of 100k items (a 42 MB document) counts 19 MB.
     */
    ORDERING_CATALOG_CACHE_BYTES: z.coerce
      .number()
      .int()
      .min(1024 * 1024)
      .max(64 * 1024 ** 3)
      .default(256 * 1024 * 1024),
    /**
     * Memory for stores' item availability overrides (LRU, bytes): a store's entry counts about
     * 128 bytes per overridden item, so a store with 1,000 overrides takes 128 KiB.
     */
    ORDERING_ITEM_AVAILABILITY_CACHE_BYTES: z.coerce
      .number()
      .int()
      .min(64 * 1024)
      .max(16 * 1024 ** 3)
      .default(64 * 1024 * 1024),
    /**
     * Memory for the store profiles validate reads (LRU, bytes): a profile counts twice its
     * JSON length, a few KiB with its hours; kept at most 5 s, dropped on store events.
     */
    ORDERING_STORE_PROFILE_CACHE_BYTES: z.coerce
      .number()
      .int()
      .min(64 * 1024)
      .max(16 * 1024 ** 3)
      .default(32 * 1024 * 1024),
    /**
     * Catalog versions compiled at once on this replica, each on its own worker thread off the
     * event loop (the download and its compile hold the document: up to 50 MB each).
     */
    ORDERING_CATALOG_COMPILE_THREADS: z.coerce.number().int().min(1).max(32).default(2),
    /**
     * Old-generation heap of each compile thread: a document that needs more fails its compile
     * instead of growing the process. A 100k-item, 42 MB document compiles in about 200 MB.
     */
    ORDERING_CATALOG_COMPILE_THREAD_HEAP_MB: z.coerce
      .number()
      .int()
      .min(64)
      .max(16_384)
      .default(384),
    /** Saved addresses one (partner, end user) may hold; a new one beyond is ADDRESS_LIMIT_REACHED. */
    ORDERING_MAX_ADDRESSES_PER_END_USER: z.coerce
      .number()
      .int()
      .min(1)
      .max(maxAddressesPerEndUser)
      .default(maxAddressesPerEndUser),
    /** Catalog compiles one partner's carts and orders may have running at once on a replica. */
    ORDERING_CATALOG_COMPILES_PER_PARTNER: z.coerce.number().int().min(1).max(32).default(1),
    /**
     * Compiles of one partner waiting for a turn on a replica (turns go round robin among
     * partners). Beyond it the request is refused: 429 RATE_LIMITED with Retry-After.
     */
    ORDERING_CATALOG_COMPILES_QUEUED_PER_PARTNER: z.coerce
      .number()
      .int()
      .min(1)
      .max(1_000)
      .default(4),
    /**
     * How long a place attempt holds its Idempotency-Key without renewing it (it renews every
     * third of this while it runs). A replica that dies mid-place is taken over this long after.
     */
    ORDERING_PLACE_LEASE_MS: z.coerce.number().int().min(500).max(300_000).default(15_000),
    /**
     * How long a place answer is replayed for its key, from when it was given (24
     * hours), and how long an unanswered key may take to get one: past that it is settled (its
     * payment released), never resumed. Tests shorten it.
     */
    ORDERING_IDEMPOTENCY_RETENTION_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .default(24 * 3_600_000),
    /**
     * How long an attempt left where the store may hold its order (the submission or the
     * capture may have been sent) waits for its partner's retry before the sweeper finishes it;
     * a settlement that fails is tried again after this, doubling up to an hour.
     */
    ORDERING_PLACE_SETTLE_AFTER_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
    /** How often each replica looks for place keys to settle and answers to forget. */
    ORDERING_PLACE_SWEEP_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000),
    /**
     * How often each replica cancels pending orders past their acceptance window and asks stores
     * for the pauses 3 timeouts in a row made due (docs/guide/orders.md#acceptance-window): an
     * order is cancelled at most this long after its deadline.
     */
    ORDERING_ACCEPTANCE_SWEEP_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(5_000),
    /**
     * How often each replica's fixture kitchen moves the fixture stores' orders along
     * (docs/guide/sandbox.md#the-kitchen): a step is taken at most this long after it is due.
     */
    ORDERING_FIXTURE_KITCHEN_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(1_000),
    /**
     * Multiplies the fixture kitchen's step delays (about a minute from placed to completed at
     * 1); tests shorten it.
     */
    ORDERING_FIXTURE_KITCHEN_STEP_SCALE: z.coerce.number().min(0.001).max(100).default(1),
    /**
     * Test-only: every new order's acceptance window in seconds, shorter than the 60 s a store
     * may set, so the fault suite sees orders time out within a phase. Production refuses it.
     */
    ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS: z.coerce.number().int().min(1).max(3_600).optional(),
    /**
     * How often each replica asks payments for the refunds cancels owe that it has not settled
     * yet (a cancel also asks at once, after it commits).
     */
    ORDERING_REFUND_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
    /**
     * A refund payments could not make is asked again after this, doubling each try up to
     * ORDERING_REFUND_RETRY_MAX_MS (an hour): one payments keeps refusing is never asked at a
     * sweep's rate.
     */
    ORDERING_REFUND_RETRY_MS: z.coerce.number().int().min(100).max(600_000).default(1_000),
    ORDERING_REFUND_RETRY_MAX_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .max(24 * 3_600_000)
      .default(3_600_000),
    /**
     * Test-only (the fault suite's mutation check, `npm run test:faults -- --mutants`): plant
     * one known defect so the suite shows it catches it (`mutants.ts` says what each does).
     * Production refuses it.
     */
    ORDERING_TEST_MUTANT: z.enum(orderingMutants).optional(),
    /**
     * Test-only (the fault suite): hold the reconciler's charge-owners question this long
     * between its two reads, widening the window in which an order can commit between them.
     * Production refuses it.
     */
    ORDERING_TEST_OWNERS_READ_HOLD_MS: z.coerce.number().int().min(1).max(10_000).optional(),
    /**
     * How long place waits for payments to authorize or capture: longer than the payment
     * processor's own timeout (10 s), so its answer (503, retryable) arrives first.
     */
    ORDERING_PAYMENTS_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(12_000),
    /**
     * Test-only: end the process (SIGKILL) right after place commits this recovery point (or,
     * `captured`, right after payments captured, before the order is recorded), for this share
     * of places, so crash tests and the fault suite kill a real process at an exact step.
     * Never set in a deployment.
     */
    ORDERING_FAILPOINT: z
      .enum(['validated', 'submitting', 'capturing', 'captured', 'recorded'])
      .optional(),
    ORDERING_FAILPOINT_RATE: z.coerce.number().min(0).max(1).default(1),
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
    /** Deliver webhooks over plain http too (local runs, tests); https otherwise. */
    WEBHOOK_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
    /** Private hosts webhook URLs may reach (tests, on-premise partners): CIDRs and hostnames. */
    WEBHOOK_ALLOWLIST: z.string().default(''),
    /** The hard limit of one delivery try: connection, request and answer. */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    /** How long an endpoint has to accept a connection. */
    WEBHOOK_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3_000),
    /**
     * Delays before each try, comma-separated ms (docs/guide/webhooks.md#retry-schedule: at once, 5
     * s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); after the last, the delivery is dead. Tests shorten
     * it.
     */
    WEBHOOK_RETRY_SCHEDULE_MS: z
      .string()
      .default(CONTRACT_RETRY_SCHEDULE_MS.join(','))
      .transform((text, ctx) => {
        try {
          return parseRetrySchedule(text);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      }),
    /** Deliveries one partner has in flight at most, across every replica. */
    WEBHOOK_MAX_IN_FLIGHT_PER_PARTNER: z.coerce.number().int().min(1).max(100).default(4),
    /** Deliveries one replica makes at once, across partners. */
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(64),
    /**
     * Of those, store-event deliveries at most (docs/guide/webhooks.md#store-events); the rest
     * stay free for order events, so a store event fanned out to many partners never delays them.
     */
    WEBHOOK_STORE_EVENT_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(32),
    /** How often a replica looks for due deliveries when no event wakes it. */
    WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
    /** How long a partner's open breaker pauses its deliveries before one try goes through. */
    WEBHOOK_BREAKER_RESET_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
    /** How long the previous secret keeps signing after a rotation (24 hours). */
    WEBHOOK_SECRET_OVERLAP_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(24 * 3_600_000),
    /** Delivered and skipped rows are kept this long (the partner's delivery log). */
    WEBHOOK_RETENTION_MS: z.coerce
      .number()
      .int()
      .min(60_000)
      .default(7 * 24 * 3_600_000),
    /** Events kept in each test tenant's webhook stream log (docs/guide/sandbox.md#webhook-stream). */
    WEBHOOK_STREAM_MAX_EVENTS: z.coerce.number().int().min(10).max(100_000).default(1_000),
    /** How long an event stays in a webhook stream log at most (3 days). */
    WEBHOOK_STREAM_RETENTION_MS: z.coerce
      .number()
      .int()
      .min(60_000)
      .default(3 * 24 * 3_600_000),
  })
  .superRefine((env, context) => {
    if (!isProduction(env)) return;
    const testOnly = [
      'ORDERING_TEST_ACCEPTANCE_WINDOW_SECONDS',
      'ORDERING_TEST_MUTANT',
      'ORDERING_TEST_OWNERS_READ_HOLD_MS',
      'ORDERING_FAILPOINT',
    ] as const;
    for (const name of testOnly) {
      if (env[name] !== undefined) {
        context.addIssue({
          code: 'custom',
          path: [name],
          message: 'production (NODE_ENV=production) refuses a test-only setting',
        });
      }
    }
  });
export type OrderingConfig = z.output<typeof orderingEnvSchema>;
