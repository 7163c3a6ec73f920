import type { PartnerMode } from '@pcp/contracts';
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
import type { BreakerState } from './processor/guarded-payment-processor.js';
import { createModeProcessors } from './processor/mode-processors.js';
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
 * processor of their mode (live, or the sandbox of test mode), each reached over HTTP behind
 * a circuit breaker of its own; and the ledger's
 * reconciler, which proves every charge belongs to one order or was released.
 */
export function createPaymentsService(deps: PaymentsServiceDeps): ServiceInstance & {
  /** The breaker of a mode's processor (live by default); undefined: no live processor. */
  breakerState(mode?: PartnerMode): BreakerState | undefined;
  /** One reconciliation now (the admin command and tests; a timer runs it too). */
  reconcile(): Promise<ReconciliationReport>;
} {
  const config = deps.config ?? paymentsEnvSchema.parse({});
  const clock = deps.clock ?? (() => new Date());
  const processors = createModeProcessors(config, {
    logger: deps.logger,
    registry: deps.metrics.registry,
  });
  const velocity = createVelocity(deps.db, config.PAYMENTS_CARD_HASH_KEY, {
    vaultAttempts: config.PAYMENTS_VAULT_ATTEMPTS_PER_WINDOW,
    cardDeclines: config.PAYMENTS_CARD_DECLINES_PER_WINDOW,
    windowSeconds: config.PAYMENTS_VELOCITY_WINDOW_SECONDS,
  });
  const handlerDeps = {
    db: deps.db,
    processors,
    clock,
    logger: deps.logger,
    velocity,
    maxCardsPerEndUser: config.PAYMENTS_MAX_CARDS_PER_END_USER,
  };
  const { PAYMENTS_FAILPOINT: failpoint, PAYMENTS_FAILPOINT_RATE: failpointRate } = config;
  const actions = createChargeActions({
    ...handlerDeps,
    ...(config.PAYMENTS_TEST_MUTANT ? { mutant: config.PAYMENTS_TEST_MUTANT } : {}),
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
    processors,
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
      await processors.close();
    },
    serving: () => subjects.serving(),
    breakerState: (mode = 'live') => processors.state(mode),
    reconcile: () => reconciler.reconcile(),
  };
}
