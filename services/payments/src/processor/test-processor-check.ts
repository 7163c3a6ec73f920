import { AppError, type Logger } from '@pcp/service-kit';
import type { GuardedPaymentProcessor } from './guarded-payment-processor.js';
import type { ProcessorLookup } from './payment-processor.js';

export interface TestProcessorCheckOptions {
  /** Asks the processor whether it is a test processor (the HTTP adapter's declaresTestMode). */
  readonly declaresTestMode: (call: ProcessorLookup) => Promise<boolean>;
  /** A question not answered by then is a failed check. */
  readonly timeoutMs: number;
  /** After a failed check, calls are refused at once for this long; the next one asks again. */
  readonly recheckMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** The sandbox processor, which refuses every call until the processor declared itself. */
export interface CheckedPaymentProcessor extends GuardedPaymentProcessor {
  /** Resolves once the processor declared itself a test processor; else SANDBOX_PROCESSOR_UNVERIFIED. */
  ready(): Promise<void>;
}

export function sandboxProcessorUnverified(retryAfterSeconds: number): AppError {
  return new AppError(
    'SANDBOX_PROCESSOR_UNVERIFIED',
    'Test-mode payments are unavailable: the sandbox processor has not confirmed that it is a test processor',
    { retryAfterSeconds },
  );
}

/**
 * Production's second guard on test money (docs/operations.md#production-settings): the
 * configuration names the sandbox processor, and the processor itself must say it is a test
 * processor before any test-mode call reaches it, so a URL that leads to the live processor
 * (an alias, a proxy) moves no money. The first call asks, and calls meanwhile wait for the
 * same answer; a processor that declared itself is trusted for the life of the process. A
 * failed check (another answer, or none) is logged as an error and refuses calls for
 * `recheckMs`, after which the next call asks again.
 */
export function requireTestProcessor(
  processor: GuardedPaymentProcessor,
  options: TestProcessorCheckOptions,
): CheckedPaymentProcessor {
  const now = options.now ?? Date.now;
  let verified = false;
  let failedAt: number | undefined;
  let asking: Promise<void> | undefined;

  const refusal = (since: number) =>
    sandboxProcessorUnverified(Math.max(1, Math.ceil((since + options.recheckMs - now()) / 1000)));

  async function ask(): Promise<void> {
    let declared = false;
    let cause: unknown;
    try {
      declared = await options.declaresTestMode({ signal: AbortSignal.timeout(options.timeoutMs) });
    } catch (error) {
      cause = error;
    }
    if (declared) {
      verified = true;
      options.logger.info({ processor: 'sandbox' }, 'the sandbox processor is a test processor');
      return;
    }
    const at = now();
    failedAt = at;
    options.logger.error(
      { processor: 'sandbox', ...(cause === undefined ? {} : { err: cause }) },
      cause === undefined
        ? 'the sandbox processor did not declare itself a test processor (GET /health with livemode false): test-mode payments refused'
        : 'the sandbox processor could not be asked whether it is a test processor: test-mode payments refused',
    );
    throw refusal(at);
  }

  function ready(): Promise<void> {
    if (verified) return Promise.resolve();
    if (failedAt !== undefined && now() - failedAt < options.recheckMs) {
      return Promise.reject(refusal(failedAt));
    }
    asking ??= ask().finally(() => {
      asking = undefined;
    });
    return asking;
  }

  return {
    async tokenize(card, call) {
      await ready();
      return processor.tokenize(card, call);
    },
    async authorize(request, call) {
      await ready();
      return processor.authorize(request, call);
    },
    async capture(request, call) {
      await ready();
      return processor.capture(request, call);
    },
    async void(request, call) {
      await ready();
      return processor.void(request, call);
    },
    async refund(request, call) {
      await ready();
      return processor.refund(request, call);
    },
    async retrieve(request, call) {
      await ready();
      return processor.retrieve(request, call);
    },
    async findAuthorizations(request, call) {
      await ready();
      return processor.findAuthorizations(request, call);
    },
    state: () => processor.state(),
    refuseWhileOpen: (operation) => processor.refuseWhileOpen(operation),
    shutdown: () => processor.shutdown(),
    ready,
  };
}
