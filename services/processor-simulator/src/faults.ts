import { z } from 'zod';

const rate = z.number().min(0).max(1);
const millis = z.int().min(0).max(600_000);

/** What a `/v1` call does, as faults name it; `retrieve` covers both authorization lookups. */
export const operations = [
  'tokenize',
  'authorize',
  'capture',
  'void',
  'refund',
  'retrieve',
] as const;

/** One of {@link operations}. */
export type Operation = (typeof operations)[number];

/** Faults the simulator injects into `/v1` calls (all but `GET /v1/charges`). */
export interface Faults {
  /** Every call waits this long before executing. */
  readonly latencyMs: number;
  /** Share of calls answered 500 without executing (and without an idempotency record). */
  readonly errorRate: number;
  /** Share of calls that never answer; nothing is executed. */
  readonly hangRate: number;
  /** Share of calls that execute, store their result, then wait `slowMs` (a lost answer). */
  readonly slowRate: number;
  readonly slowMs: number;
  /** The operations the faults above apply to; empty: every operation. */
  readonly operations: readonly Operation[];
}

/** A change to the faults, as `PUT /_control/faults` and `setFaults()` take it. */
export const faultChangeSchema = z.strictObject({
  latencyMs: millis.optional(),
  errorRate: rate.optional(),
  hangRate: rate.optional(),
  slowRate: rate.optional(),
  slowMs: millis.optional(),
  operations: z.array(z.enum(operations)).max(operations.length).optional(),
});

export const noFaults: Faults = Object.freeze({
  latencyMs: 0,
  errorRate: 0,
  hangRate: 0,
  slowRate: 0,
  slowMs: 0,
  operations: Object.freeze([]),
});

/** The faults a call of `operation` gets: none when they target other operations. */
export const faultsFor = (faults: Faults, operation: Operation): Faults =>
  faults.operations.length === 0 || faults.operations.includes(operation) ? faults : noFaults;

/** True with probability `probability`. */
export const roll = (probability: number): boolean =>
  probability > 0 && Math.random() < probability;

/**
 * Wait `ms` (Infinity: until a signal). Resolves true when the time ran out, false when a
 * signal aborted first; never rejects, so callers need no try/catch around waits.
 */
export function pause(ms: number, ...signals: AbortSignal[]): Promise<boolean> {
  if (signals.some((signal) => signal.aborted)) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const finish = (elapsed: boolean) => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
      resolve(elapsed);
    };
    const onAbort = () => finish(false);
    const timer = Number.isFinite(ms) ? setTimeout(() => finish(true), ms) : undefined;
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
  });
}
