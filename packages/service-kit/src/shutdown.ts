import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from './logger.js';

interface ShutdownStep {
  readonly name: string;
  readonly close: (timeLeftMs: number) => Promise<void>;
  /** Share of the whole deadline by which this step must be done (0–1]. */
  readonly doneBy: number;
}

/**
 * Ordered shutdown: resources register a close step as they are acquired and are closed in
 * reverse order (HTTP, consumers, NATS drain, db pool), all within one deadline that is
 * shorter than the Kubernetes grace period. Each step is given the time left until its own
 * mark (`doneBy` of the deadline) and is not waited for past it, so a slow step cannot use
 * up the time of the ones after it; the process exits when the whole deadline passes.
 */
export function createShutdown(logger: Logger, timeoutMs: number) {
  const steps: ShutdownStep[] = [];
  let running: Promise<void> | undefined;

  async function run(reason: string): Promise<void> {
    logger.info({ reason }, 'shutting down');
    const startedAt = Date.now();
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    for (const step of [...steps].reverse()) {
      const timeLeftMs = Math.max(0, startedAt + step.doneBy * timeoutMs - Date.now());
      const cutOff = new AbortController();
      try {
        const outcome = await Promise.race([
          step.close(timeLeftMs).then(() => 'closed' as const),
          sleep(timeLeftMs, 'cut off' as const, { signal: cutOff.signal, ref: false }),
        ]);
        if (outcome === 'cut off') {
          logger.error({ step: step.name, timeLeftMs }, 'shutdown step ran out of time');
        }
      } catch (error) {
        logger.error({ err: error, step: step.name }, 'shutdown step failed');
      } finally {
        cutOff.abort();
      }
    }
    clearTimeout(deadline);
    logger.info('stopped');
  }

  return {
    /**
     * Register a step; `close` is told how long it has. `doneBy` (default 1) is the share of
     * the deadline by which it must be done, leaving room for the steps that run after it.
     */
    add(name: string, close: (timeLeftMs: number) => Promise<void>, doneBy = 1): void {
      steps.push({ name, close, doneBy });
    },
    /** Run once; later calls (a second signal) wait for the same run. */
    run(reason: string): Promise<void> {
      running ??= run(reason);
      return running;
    },
    trapSignals(): void {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.once(signal, () => {
          void this.run(signal).then(() => process.exit(0));
        });
      }
    },
  };
}
export type Shutdown = ReturnType<typeof createShutdown>;
