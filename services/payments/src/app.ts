import {
  createBusClient,
  createSubjectService,
  type ServiceDeps,
  type ServiceInstance,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { createChargeActions } from './charges/charge-actions.js';
import { paymentsEnvSchema, type PaymentsConfig } from './config.js';
import type { PaymentsDatabase } from './db/payments.table.js';
import { cardHandlers } from './handlers/card.handlers.js';
import { chargeHandlers } from './handlers/charge.handlers.js';
import { testResetHandler } from './handlers/test-reset.handlers.js';
import { guardPaymentProcessor } from './processor/guarded-payment-processor.js';
import { createHttpPaymentProcessor } from './processor/http-payment-processor.js';
import { createVelocity } from './velocity/velocity.js';
import { createReconciler, type ReconciliationReport } from './reconciler/reconciler.js';

export { paymentsEnvSchema, type PaymentsConfig } from './config.js';
export { PAYMENTS_SCHEMA, paymentsMigrations } from './db/migrations/index.js';
export type { PaymentsDatabase } from './db/payments.table.js';
export type { ReconciliationReport } from './reconciler/reconciler.js';

export interface PaymentsServiceDeps extends ServiceDeps {
  readonly db: Kysely<PaymentsDatabase>;
  /** Defaults to the environment schema's defaults. */
  readonly config?: PaymentsConfig;
  /** Injected so tests can pin time (card expiry). */
  readonly clock?: () => Date;
}

/**
 * The payments service: vaulted cards of (partner, end user) and charges through the card
 * processor, which is reached over HTTP behind a circuit breaker; and the ledger's
 * reconciler, which proves every charge belongs to one order or was released.
 */
export function createPaymentsService(deps: PaymentsServiceDeps): ServiceInstance & {
  breakerState(): string;
  /** One reconciliation now (the admin command and tests; a timer runs it too). */
  reconcile(): Promise<ReconciliationReport>;
} {
  const config = deps.config ?? paymentsEnvSchema.parse({});
  const clock = deps.clock ?? (() => new Date());
  const http = createHttpPaymentProcessor({
    url: config.PAYMENT_PROCESSOR_URL,
    apiKey: config.PAYMENT_PROCESSOR_API_KEY,
    connections: config.PAYMENT_PROCESSOR_MAX_CONCURRENCY,
  });
  const processor = guardPaymentProcessor(http, {
    timeoutMs: config.PAYMENT_PROCESSOR_TIMEOUT_MS,
    errorThresholdPercent: config.PAYMENT_BREAKER_ERROR_PERCENT,
    volumeThreshold: config.PAYMENT_BREAKER_VOLUME_THRESHOLD,
    windowMs: config.PAYMENT_BREAKER_WINDOW_MS,
    resetMs: config.PAYMENT_BREAKER_RESET_MS,
    capacity: config.PAYMENT_PROCESSOR_MAX_CONCURRENCY,
    logger: deps.logger,
    registry: deps.metrics.registry,
  });
  // While the breaker is open, retrying before it may probe again is pointless.
  const retryAfterSeconds = () =>
    processor.state() === 'open' ? Math.ceil(config.PAYMENT_BREAKER_RESET_MS / 1000) : 1;
  const velocity = createVelocity(deps.db, config.PAYMENTS_CARD_HASH_KEY, {
    vaultAttempts: config.PAYMENTS_VAULT_ATTEMPTS_PER_WINDOW,
    cardDeclines: config.PAYMENTS_CARD_DECLINES_PER_WINDOW,
    windowSeconds: config.PAYMENTS_VELOCITY_WINDOW_SECONDS,
  });
  const handlerDeps = {
    db: deps.db,
    processor,
    clock,
    logger: deps.logger,
    retryAfterSeconds,
    velocity,
    maxCardsPerEndUser: config.PAYMENTS_MAX_CARDS_PER_END_USER,
  };
  const { PAYMENTS_FAILPOINT: failpoint, PAYMENTS_FAILPOINT_RATE: failpointRate } = config;
  const actions = createChargeActions({
    ...handlerDeps,
    ...(failpoint
      ? {
          failpoint: (point: string) => {
            if (point === failpoint && Math.random() < failpointRate) {
              process.kill(process.pid, 'SIGKILL');
            }
          },
        }
      : {}),
  });
  const subjects = createSubjectService(deps, { name: 'payments', version: '0.1.0' }, [
    ...cardHandlers(handlerDeps),
    ...chargeHandlers(handlerDeps, actions),
    testResetHandler(deps.db),
  ]);
  const reconciler = createReconciler({
    db: deps.db,
    bus: createBusClient(deps.nc, {
      prefix: deps.subjectPrefix,
      timeoutMs: deps.requestTimeoutMs,
      logger: deps.logger,
      metrics: deps.metrics,
    }),
    processor,
    actions,
    logger: deps.logger,
    registry: deps.metrics.registry,
    clock,
    inFlightMs: config.PAYMENTS_RECONCILE_IN_FLIGHT_MS,
    quietMs: config.PAYMENTS_RECONCILE_QUIET_MS,
    maxChargesPerRun: config.PAYMENTS_RECONCILE_MAX_CHARGES,
  });
  let reconciling: NodeJS.Timeout | undefined;
  return {
    async start() {
      await subjects.start();
      if (config.PAYMENTS_RECONCILE_INTERVAL_MS > 0) {
        reconciling = setInterval(() => {
          reconciler.reconcile().catch((error: unknown) => {
            deps.logger.warn(
              { err: error },
              'the ledger reconciliation failed; the next one retries',
            );
          });
        }, config.PAYMENTS_RECONCILE_INTERVAL_MS);
      }
    },
    async stop(timeoutMs) {
      clearInterval(reconciling);
      await Promise.all([subjects.stop(timeoutMs), reconciler.stop()]);
      processor.shutdown();
      await http.close();
    },
    serving: () => subjects.serving(),
    breakerState: () => processor.state(),
    reconcile: () => reconciler.reconcile(),
  };
}
