import type { PartnerMode } from '@pcp/contracts';
import { AppError, isProduction, type Logger } from '@pcp/service-kit';
import type { Registry } from 'prom-client';
import type { PaymentsConfig } from '../config.js';
import {
  createProcessorMetrics,
  guardPaymentProcessor,
  type BreakerState,
  type GuardedPaymentProcessor,
  type ProcessorName,
} from './guarded-payment-processor.js';
import { createHttpPaymentProcessor } from './http-payment-processor.js';
import { requireTestProcessor } from './test-processor-check.js';

/**
 * The processor of each mode (docs/guide/payments.md#test-mode-payments): test mode always
 * the sandbox processor, in every deployment; live mode the configured processor, or none.
 * Each has its own circuit breaker, so a failing sandbox never sheds live payments.
 */
export interface ModeProcessors {
  /** The mode's processor; live without one configured is LIVE_PAYMENTS_NOT_CONFIGURED. */
  forMode(mode: PartnerMode): GuardedPaymentProcessor;
  /**
   * Throws what every call of the mode would fail with before it reached a processor:
   * LIVE_PAYMENTS_NOT_CONFIGURED, or (production) SANDBOX_PROCESSOR_UNVERIFIED while the sandbox
   * processor has not declared itself a test processor. For callers that count or record
   * something before their first call.
   */
  ready(mode: PartnerMode): Promise<void>;
  /** How long a caller should wait before retrying the mode's processor. */
  retryAfterSeconds(mode: PartnerMode): number;
  /** The breaker of the mode's processor; undefined for live without one configured. */
  state(mode: PartnerMode): BreakerState | undefined;
  close(): Promise<void>;
}

export function liveProcessorNotConfigured(): AppError {
  return new AppError(
    'LIVE_PAYMENTS_NOT_CONFIGURED',
    'This deployment has no live payment processor; use a test key (pcp_test_…) to charge test cards',
  );
}

export function createModeProcessors(
  config: PaymentsConfig,
  deps: { logger: Logger; registry: Registry },
): ModeProcessors {
  const metrics = createProcessorMetrics(deps.registry);
  const open = (name: ProcessorName, url: string, apiKey: string) => {
    const http = createHttpPaymentProcessor({
      url,
      apiKey,
      connections: config.PAYMENT_PROCESSOR_MAX_CONCURRENCY,
    });
    const guarded = guardPaymentProcessor(http, {
      name,
      timeoutMs: config.PAYMENT_PROCESSOR_TIMEOUT_MS,
      errorThresholdPercent: config.PAYMENT_BREAKER_ERROR_PERCENT,
      volumeThreshold: config.PAYMENT_BREAKER_VOLUME_THRESHOLD,
      windowMs: config.PAYMENT_BREAKER_WINDOW_MS,
      resetMs: config.PAYMENT_BREAKER_RESET_MS,
      capacity: config.PAYMENT_PROCESSOR_MAX_CONCURRENCY,
      logger: deps.logger,
      metrics,
    });
    return { guarded, http };
  };
  const opened = open('sandbox', config.SANDBOX_PROCESSOR_URL, config.SANDBOX_PROCESSOR_API_KEY);
  // Production does not take the configuration's word that the sandbox moves no real money.
  const checked = isProduction(config)
    ? requireTestProcessor(opened.guarded, {
        declaresTestMode: (call) => opened.http.declaresTestMode(call),
        timeoutMs: config.PAYMENT_PROCESSOR_TIMEOUT_MS,
        recheckMs: config.PAYMENT_BREAKER_RESET_MS,
        logger: deps.logger,
      })
    : undefined;
  const sandbox = { ...opened, guarded: checked ?? opened.guarded };
  const live =
    config.PAYMENT_PROCESSOR_URL === undefined
      ? undefined
      : open('live', config.PAYMENT_PROCESSOR_URL, config.PAYMENT_PROCESSOR_API_KEY);
  const find = (mode: PartnerMode) => (mode === 'test' ? sandbox : live)?.guarded;

  return {
    forMode(mode) {
      const processor = find(mode);
      if (!processor) throw liveProcessorNotConfigured();
      return processor;
    },
    async ready(mode) {
      if (mode === 'live' && !live) throw liveProcessorNotConfigured();
      if (mode === 'test') await checked?.ready();
    },
    // While a breaker is open, retrying before it may probe again is pointless.
    retryAfterSeconds: (mode) =>
      find(mode)?.state() === 'open' ? Math.ceil(config.PAYMENT_BREAKER_RESET_MS / 1000) : 1,
    state: (mode) => find(mode)?.state(),
    async close() {
      sandbox.guarded.shutdown();
      live?.guarded.shutdown();
      await Promise.all([sandbox.http.close(), live?.http.close()]);
    },
  };
}
