import { setMaxListeners } from 'node:events';
import { faultChangeSchema, noFaults, type Faults } from './faults.js';
import { createIdempotencyStore } from './idempotency.js';
import type { Log } from './journal.js';
import { createLedger, type Charge } from './ledger.js';
import { parse, buildApp } from './routes.js';
import { openSavedState, unsaved } from './saved-state.js';

export { processorSimulatorEnvSchema } from './config.js';
export type { Faults, Operation } from './faults.js';
export type { Log } from './journal.js';
export type { Charge, ChargeStatus } from './ledger.js';
export { testCards } from './test-cards.js';

/** Options of {@link createProcessorSimulator}. */
export interface ProcessorSimulatorOptions {
  /** The Bearer key `/v1` calls must send; default `sk_test_simulator`. */
  readonly apiKey?: string;
  /** Faults from the start (rates and waits default to 0, operations to all). */
  readonly faults?: Partial<Faults>;
  /** Most charges, tokens and idempotency records kept; default 200 000. */
  readonly maxRecords?: number;
  /**
   * A folder to keep the state in (`journal.jsonl`), so a restart remembers it; without one
   * the state is in memory only. Card numbers and CVCs are never written.
   */
  readonly dataDir?: string;
  /**
   * The key of card fingerprints (an HMAC of the number). Given, it is never saved with the
   * state; without one, a random key is made and saved in `dataDir` (local runs).
   */
  readonly fingerprintKey?: string;
  /** Where a torn journal line (warn) and a failed write (error) are reported; the console. */
  readonly log?: Log;
}

/** A running (or ready to run) card-processor simulator. */
export interface ProcessorSimulator {
  /** Listen (port 0 and 127.0.0.1 by default); resolves to the base URL. */
  listen(options?: { port?: number; host?: string }): Promise<string>;
  /** Stop listening and end every request still open, hanging ones included. */
  close(): Promise<void>;
  faults(): Faults;
  /** Merge a (validated) change into the faults; returns the result. */
  setFaults(change: Partial<Faults>): Faults;
  /** Forget charges and idempotency records, saved ones too; no faults, on any operation. */
  reset(): void;
  /** The charges, oldest first. */
  charges(): Charge[];
}

/**
 * A Stripe-like card processor over HTTP: tokens, authorizations, captures, voids, refunds,
 * idempotency keys, scripted test cards and injectable faults; in memory, or kept in a folder.
 */
export function createProcessorSimulator(
  options: ProcessorSimulatorOptions = {},
): ProcessorSimulator {
  const maxRecords = options.maxRecords ?? 200_000;
  const ledger = createLedger(maxRecords, options.fingerprintKey);
  const idempotency = createIdempotencyStore(maxRecords);
  const log: Log =
    options.log ?? ((level, message) => console[level](`processor simulator: ${message}`));
  const saved = options.dataDir
    ? openSavedState(options.dataDir, ledger, idempotency, log)
    : unsaved;
  const closing = new AbortController();
  // Every request waiting out its latency listens for the close: one listener per request
  // in flight, not a leak (each is removed when its wait ends).
  setMaxListeners(0, closing.signal);
  let faults: Faults = noFaults;

  const setFaults = (change: Partial<Faults>): Faults => {
    const { operations, ...rest } = parse(faultChangeSchema, change);
    faults = Object.freeze({
      ...faults,
      ...rest,
      ...(operations ? { operations: Object.freeze(operations) } : {}),
    });
    return faults;
  };
  const reset = () => {
    ledger.clear();
    idempotency.clear();
    faults = noFaults;
    saved.rewrite();
  };
  setFaults(options.faults ?? {});

  const app = buildApp({
    apiKey: options.apiKey ?? 'sk_test_simulator',
    ledger,
    idempotency,
    saved,
    faults: () => faults,
    setFaults,
    reset,
    closing: closing.signal,
  });

  return {
    listen: ({ port = 0, host = '127.0.0.1' } = {}) =>
      app.listen({ port, host }).then(() => {
        const address = app.server.address();
        if (address === null || typeof address === 'string') return String(address);
        const hostname = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        return `http://${hostname}:${address.port}`;
      }),
    close: async () => {
      closing.abort();
      await app.close();
      saved.close();
    },
    faults: () => faults,
    setFaults,
    reset,
    charges: () => ledger.list(),
  };
}
