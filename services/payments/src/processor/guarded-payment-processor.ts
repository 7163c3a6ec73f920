import type { Logger } from '@pcp/service-kit';
import type { EventEmitter } from 'node:events';
import CircuitBreaker from 'opossum';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  ProcessorRejectedError,
  ProcessorUnavailableError,
  type PaymentProcessor,
  type ProcessorLookup,
} from './payment-processor.js';

export interface BreakerOptions {
  /** A call not answered by then fails (and its HTTP request is aborted). */
  readonly timeoutMs: number;
  /** The breaker opens when more than this share of calls in the window failed… */
  readonly errorThresholdPercent: number;
  /** …and the window holds at least this many calls. */
  readonly volumeThreshold: number;
  readonly windowMs: number;
  /** How long it stays open before one probe call may go through (half-open). */
  readonly resetMs: number;
  /** Calls in flight at most; more fail at once (a hanging processor holds no more). */
  readonly capacity: number;
}

export type BreakerState = 'closed' | 'open' | 'halfOpen';

export interface GuardedPaymentProcessor extends PaymentProcessor {
  state(): BreakerState;
  /**
   * While the breaker is open: the error a call would fail with (counted as short-circuited),
   * so a caller can refuse before doing work of its own (recording an attempt) for nothing.
   */
  refuseWhileOpen(operation: Operation): ProcessorUnavailableError | undefined;
  shutdown(): void;
}

const stateValues: Record<BreakerState, number> = { closed: 0, halfOpen: 1, open: 2 };

/** What a call does, as metrics label it: both lookups are `retrieve`. */
type Operation = 'tokenize' | 'authorize' | 'capture' | 'void' | 'refund' | 'retrieve';
type Action = (
  controller: AbortController,
  run: (signal: AbortSignal) => Promise<unknown>,
) => Promise<unknown>;

/** Which processor a guard stands before: the live one, or the sandbox of test mode. */
export type ProcessorName = 'live' | 'sandbox';

/** The processors' metrics, one set per registry, labelled by processor. */
export function createProcessorMetrics(registry: Registry) {
  return {
    state: new Gauge({
      name: 'pcp_payment_processor_breaker_state',
      help: 'Circuit breaker around a payment processor (live, or the sandbox of test mode): 0 closed, 1 half-open, 2 open',
      labelNames: ['processor'] as const,
      registers: [registry],
    }),
    calls: new Counter({
      name: 'pcp_payment_processor_calls_total',
      help: 'Calls to a payment processor (live, or the sandbox of test mode), by operation and outcome (ok, declined, rejected, busy, failed, timed_out, short_circuited, over_capacity)',
      labelNames: ['processor', 'operation', 'outcome'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'pcp_payment_processor_duration_seconds',
      help: 'Time a payment processor (live, or the sandbox of test mode) took to answer, by operation',
      labelNames: ['processor', 'operation'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}
export type ProcessorMetrics = ReturnType<typeof createProcessorMetrics>;

/**
 * The processor behind an opossum circuit breaker. Processor faults (network, 5xx,
 * timeouts, calls over capacity) count against it; answers (authorizations, declines,
 * rejections, a key still running) do not, so a run of declines never opens it. While
 * open, calls fail at once with ProcessorUnavailableError; after `resetMs` one probe
 * goes through and its outcome closes or reopens the breaker. Its state is a metric and
 * every change is logged.
 */
export function guardPaymentProcessor(
  processor: PaymentProcessor,
  options: BreakerOptions & { name: ProcessorName; logger: Logger; metrics: ProcessorMetrics },
): GuardedPaymentProcessor {
  const { name } = options;
  const metrics = {
    state: options.metrics.state.labels({ processor: name }),
    calls: {
      inc: (labels: { operation: Operation; outcome: string }) =>
        options.metrics.calls.inc({ processor: name, ...labels }),
    },
    duration: {
      startTimer: (labels: { operation: Operation }) =>
        options.metrics.duration.startTimer({ processor: name, ...labels }),
    },
  };

  const action: Action = (controller, run) => run(controller.signal);
  const breaker = new CircuitBreaker<Parameters<Action>, unknown>(action, {
    timeout: options.timeoutMs,
    errorThresholdPercentage: options.errorThresholdPercent,
    volumeThreshold: options.volumeThreshold,
    rollingCountTimeout: options.windowMs,
    rollingCountBuckets: 10,
    resetTimeout: options.resetMs,
    capacity: options.capacity,
    // The processor answered: it is healthy, whatever it said.
    errorFilter: (error: unknown) =>
      error instanceof ProcessorRejectedError ||
      (error instanceof ProcessorUnavailableError && !error.fault),
  });
  // opossum's timeout settles the call; aborting its request frees the connection too.
  // (opossum passes the call's arguments; its typings leave them out.)
  (breaker as EventEmitter).on(
    'timeout',
    (_error: unknown, _latency: unknown, args: Parameters<Action>) => args[0].abort(),
  );

  const state = (): BreakerState =>
    breaker.opened ? 'open' : breaker.halfOpen ? 'halfOpen' : 'closed';
  metrics.state.set(stateValues.closed);
  const changed = () => {
    const now = state();
    metrics.state.set(stateValues[now]);
    const { fires, failures, timeouts, rejects } = breaker.stats;
    const log = {
      breaker: 'payment-processor',
      processor: name,
      state: now,
      fires,
      failures,
      timeouts,
      rejects,
    };
    if (now === 'open') options.logger.warn(log, 'payment processor breaker opened');
    else options.logger.info(log, `payment processor breaker ${now}`);
  };
  breaker.on('open', changed).on('halfOpen', changed).on('close', changed);

  async function guarded<C extends ProcessorLookup, T>(
    operation: Operation,
    call: C,
    run: (call: C) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const stopTimer = metrics.duration.startTimer({ operation });
    try {
      const result = (await breaker.fire(controller, (signal) =>
        run({ ...call, signal: call.signal ? AbortSignal.any([call.signal, signal]) : signal }),
      )) as T;
      stopTimer();
      metrics.calls.inc({
        operation,
        outcome:
          (result as { outcome?: string } | undefined)?.outcome === 'declined' ? 'declined' : 'ok',
      });
      return result;
    } catch (error) {
      throw settleFailure(operation, error, stopTimer);
    }
  }

  function shortCircuited(operation: Operation, cause?: unknown): ProcessorUnavailableError {
    metrics.calls.inc({ operation, outcome: 'short_circuited' });
    return new ProcessorUnavailableError('The payment processor breaker is open', { cause });
  }

  function settleFailure(operation: Operation, error: unknown, stopTimer: () => void): Error {
    const code = (error as { code?: unknown } | null)?.code;
    if (error instanceof ProcessorRejectedError) {
      stopTimer();
      metrics.calls.inc({ operation, outcome: 'rejected' });
      return error;
    }
    if (error instanceof ProcessorUnavailableError) {
      stopTimer();
      metrics.calls.inc({ operation, outcome: error.fault ? 'failed' : 'busy' });
      return error;
    }
    if (code === 'EOPENBREAKER') return shortCircuited(operation, error);
    if (code === 'ETIMEDOUT') {
      stopTimer();
      metrics.calls.inc({ operation, outcome: 'timed_out' });
      return new ProcessorUnavailableError(
        `The payment processor did not answer within ${options.timeoutMs} ms`,
        { cause: error },
      );
    }
    if (code === 'ESEMLOCKED') {
      metrics.calls.inc({ operation, outcome: 'over_capacity' });
      return new ProcessorUnavailableError('Too many payment processor calls in flight', {
        cause: error,
      });
    }
    stopTimer();
    metrics.calls.inc({ operation, outcome: 'failed' });
    return new ProcessorUnavailableError('The payment processor call failed', { cause: error });
  }

  return {
    tokenize: (card, call) => guarded('tokenize', call, (c) => processor.tokenize(card, c)),
    authorize: (request, call) =>
      guarded('authorize', call, (c) => processor.authorize(request, c)),
    capture: (request, call) => guarded('capture', call, (c) => processor.capture(request, c)),
    void: (request, call) => guarded('void', call, (c) => processor.void(request, c)),
    refund: (request, call) => guarded('refund', call, (c) => processor.refund(request, c)),
    retrieve: (request, call) => guarded('retrieve', call, (c) => processor.retrieve(request, c)),
    findAuthorizations: (request, call) =>
      guarded('retrieve', call, (c) => processor.findAuthorizations(request, c)),
    state,
    refuseWhileOpen: (operation) => (breaker.opened ? shortCircuited(operation) : undefined),
    shutdown: () => breaker.shutdown(),
  };
}
