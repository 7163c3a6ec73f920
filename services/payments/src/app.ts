import { createSubjectService, type ServiceDeps, type ServiceInstance } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { paymentsEnvSchema, type PaymentsConfig } from './config.js';
import type { PaymentsDatabase } from './db/payments.table.js';
import { cardHandlers } from './handlers/card.handlers.js';
import { chargeHandlers } from './handlers/charge.handlers.js';
import { guardPaymentProcessor } from './processor/guarded-payment-processor.js';
import { createHttpPaymentProcessor } from './processor/http-payment-processor.js';

export { paymentsEnvSchema, type PaymentsConfig } from './config.js';
export { PAYMENTS_SCHEMA, paymentsMigrations } from './db/migrations/index.js';
export type { PaymentsDatabase } from './db/payments.table.js';

export interface PaymentsServiceDeps extends ServiceDeps {
  readonly db: Kysely<PaymentsDatabase>;
  /** Defaults to the environment schema's defaults. */
  readonly config?: PaymentsConfig;
  /** Injected so tests can pin time (card expiry). */
  readonly clock?: () => Date;
}

/**
 * The payments service: vaulted cards of (partner, end user) and charges through the card
 * processor, which is reached over HTTP behind a circuit breaker.
 */
export function createPaymentsService(
  deps: PaymentsServiceDeps,
): ServiceInstance & { breakerState(): string } {
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
  const handlerDeps = { db: deps.db, processor, clock, logger: deps.logger, retryAfterSeconds };
  const subjects = createSubjectService(deps, { name: 'payments', version: '0.1.0' }, [
    ...cardHandlers(handlerDeps),
    ...chargeHandlers(handlerDeps),
  ]);
  return {
    start: () => subjects.start(),
    async stop(timeoutMs) {
      await subjects.stop(timeoutMs);
      processor.shutdown();
      await http.close();
    },
    serving: () => subjects.serving(),
    breakerState: () => processor.state(),
  };
}
