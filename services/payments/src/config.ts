import { maxCardsPerEndUser } from '@pcp/contracts';
import { isProduction, nodeEnvSchema } from '@pcp/service-kit';
import { z } from 'zod';

/** The processor simulator's keys (services/processor-simulator): never a real processor's. */
const SIMULATOR_KEY_PREFIX = 'sk_test_simulator';
/** The placeholder of deploy/k8s/base/secret.example.yaml. */
const EXAMPLE_KEY = 'change-me';
/** The card-hash key of local runs and tests: public, so never a deployment's. */
const LOCAL_CARD_HASH_KEY = 'local-only-card-hash-key-0123456789';

/** The defects the fault suite's mutation check plants in payments, one at a time. */
export const paymentsMutants = ['refund-twice'] as const;
export type PaymentsMutant = (typeof paymentsMutants)[number];

/**
 * The host a processor URL names, as DNS compares it: URL parsing lower-cases it and drops a
 * default port; a trailing dot names the same host. The scheme, port and path are left out on
 * purpose: the live processor's host on another scheme, port or path is still the live processor.
 */
function processorHost(url: string): string {
  return new URL(url).hostname.replace(/\.$/, '');
}

export const paymentsEnvSchema = z
  .object({
    NODE_ENV: nodeEnvSchema,
    /**
     * The live card processor's API: live-mode charges only. No default: without it every
     * live card operation answers 503 LIVE_PAYMENTS_NOT_CONFIGURED (test mode still works);
     * local runs and tests set it to the processor simulator. Production (NODE_ENV=production)
     * requires https and a key that is neither the simulator's nor the example Secret's.
     */
    PAYMENT_PROCESSOR_URL: z.url().optional(),
    PAYMENT_PROCESSOR_API_KEY: z.string().min(1).default(SIMULATOR_KEY_PREFIX),
    /**
     * The sandbox processor: every test-mode card operation, in every deployment
     * (docs/guide/payments.md#test-mode-payments); the processor simulator by default. It has
     * a circuit breaker of its own (with the same settings as the live one's). Production
     * refuses the live processor's host here, and sends no test-mode call until the processor
     * itself has declared it is a test processor (processor/test-processor-check.ts).
     */
    SANDBOX_PROCESSOR_URL: z.url().default('http://127.0.0.1:4010'),
    SANDBOX_PROCESSOR_API_KEY: z.string().min(1).default(SIMULATOR_KEY_PREFIX),
    /**
     * A processor call not answered by then fails as PAYMENT_PROCESSOR_UNAVAILABLE (10 s, as
     * docs/guide/payments.md#processor-outcomes says). The gateway's PAYMENTS_REQUEST_TIMEOUT_MS
     * must be longer.
     */
    PAYMENT_PROCESSOR_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    /** Processor calls in flight per replica at most (and connections kept to it). */
    PAYMENT_PROCESSOR_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(256),
    /** The breaker opens when more than this share of calls in its window failed… */
    PAYMENT_BREAKER_ERROR_PERCENT: z.coerce.number().min(1).max(100).default(50),
    /** …and the window held at least this many calls. */
    PAYMENT_BREAKER_VOLUME_THRESHOLD: z.coerce.number().int().min(1).max(10_000).default(10),
    PAYMENT_BREAKER_WINDOW_MS: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
    /** Open this long, then one probe call decides (half-open). */
    PAYMENT_BREAKER_RESET_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
    /** How often the ledger's reconciler runs (on one replica at a time); 0 turns it off. */
    PAYMENTS_RECONCILE_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(24 * 3_600_000)
      .default(300_000),
    /**
     * How long a charge may be in flight (held for a place attempt that may still use it)
     * before the reconciler reports it: longer than a place key's 24-hour deadline.
     */
    PAYMENTS_RECONCILE_IN_FLIGHT_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .default(25 * 3_600_000),
    /**
     * Test-only (the fault suite): SIGKILL this process right after the processor authorized a
     * charge and before payments recorded it, for this share of authorizations. Never set in a
     * deployment.
     */
    PAYMENTS_FAILPOINT: z.enum(['authorized-unrecorded']).optional(),
    PAYMENTS_FAILPOINT_RATE: z.coerce.number().min(0).max(1).default(1),
    /**
     * Test-only (the fault suite's mutation check, `npm run test:faults -- --mutants`): plant
     * one known defect, so the suite shows it catches it. `refund-twice` sends every refund
     * call to the processor under a key of its own, as if a retry after a lost answer were a
     * new refund. Production refuses it.
     */
    PAYMENTS_TEST_MUTANT: z.enum(paymentsMutants).optional(),
    /**
     * A charge changed this recently is left in flight by the reconciler (an operation of
     * payments' own may still be on its way); it is judged at a later run.
     */
    PAYMENTS_RECONCILE_QUIET_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
    /**
     * The key of payments' hash (HMAC-SHA256) of card numbers, by which velocity limits know a
     * card across end users. Production requires a random secret of 32+ characters of its own;
     * the default serves local runs and tests only. Changing it forgets cards' decline counts.
     */
    PAYMENTS_CARD_HASH_KEY: z.string().min(32).default(LOCAL_CARD_HASH_KEY),
    /** Live cards one (partner, end user) may hold; a new card beyond is CARD_LIMIT_REACHED. */
    PAYMENTS_MAX_CARDS_PER_END_USER: z.coerce
      .number()
      .int()
      .min(1)
      .max(maxCardsPerEndUser)
      .default(maxCardsPerEndUser),
    /** Vault attempts one (partner, end user) may make per velocity window. */
    PAYMENTS_VAULT_ATTEMPTS_PER_WINDOW: z.coerce.number().int().min(1).max(10_000).default(20),
    /**
     * Processor declines one card may get per velocity window, across end users and partners;
     * beyond, vaulting or authorizing it is refused without asking the processor.
     */
    PAYMENTS_CARD_DECLINES_PER_WINDOW: z.coerce.number().int().min(1).max(10_000).default(5),
    PAYMENTS_VELOCITY_WINDOW_SECONDS: z.coerce.number().int().min(60).max(86_400).default(3_600),
    /** Charges one reconciliation examines at most; the rest wait for the next. */
    PAYMENTS_RECONCILE_MAX_CHARGES: z.coerce.number().int().min(1).max(1_000_000).default(20_000),
  })
  .superRefine((env, context) => {
    if (!isProduction(env)) return;
    for (const name of ['PAYMENTS_TEST_MUTANT', 'PAYMENTS_FAILPOINT'] as const) {
      if (env[name] !== undefined) {
        context.addIssue({
          code: 'custom',
          path: [name],
          message: 'production (NODE_ENV=production) refuses a test-only defect or failpoint',
        });
      }
    }
    if (env.PAYMENT_PROCESSOR_URL !== undefined) {
      if (new URL(env.PAYMENT_PROCESSOR_URL).protocol !== 'https:') {
        context.addIssue({
          code: 'custom',
          path: ['PAYMENT_PROCESSOR_URL'],
          message: 'production (NODE_ENV=production) requires an https URL',
        });
      }
      const key = env.PAYMENT_PROCESSOR_API_KEY;
      if (key.startsWith(SIMULATOR_KEY_PREFIX) || key === EXAMPLE_KEY) {
        context.addIssue({
          code: 'custom',
          path: ['PAYMENT_PROCESSOR_API_KEY'],
          message:
            "production (NODE_ENV=production) requires the processor's real key, not the simulator's or the example's",
        });
      }
      // The sandbox may be the simulator; it must never be able to move real money.
      if (env.SANDBOX_PROCESSOR_API_KEY === key) {
        context.addIssue({
          code: 'custom',
          path: ['SANDBOX_PROCESSOR_API_KEY'],
          message: "the sandbox processor's key must not be the live processor's",
        });
      }
      if (processorHost(env.SANDBOX_PROCESSOR_URL) === processorHost(env.PAYMENT_PROCESSOR_URL)) {
        context.addIssue({
          code: 'custom',
          path: ['SANDBOX_PROCESSOR_URL'],
          message:
            "the sandbox processor must not be the live processor (PAYMENT_PROCESSOR_URL's host)",
        });
      }
    }
    if (env.PAYMENTS_CARD_HASH_KEY === LOCAL_CARD_HASH_KEY) {
      context.addIssue({
        code: 'custom',
        path: ['PAYMENTS_CARD_HASH_KEY'],
        message:
          'production (NODE_ENV=production) requires a card-hash key of its own, not the local one',
      });
    }
  });
export type PaymentsConfig = z.output<typeof paymentsEnvSchema>;
