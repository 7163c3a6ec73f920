import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from './logger.js';

interface ShutdownStep {
  readonly name: string;
  readonly close: (timeLeftMs: number) => Promise<void>;
  /** Share of the whole deadline by which this step must be done (0–1]. */
  readonly doneBy: number;
}

interface Unready {
  readonly begin: () => void;
  readonly delayMs: number;
}

/**
 * Ordered shutdown: resources register a close step as they are acquired and are closed in
 * the order of their marks (`doneBy`; steps with the same mark in reverse order of
 * registration): HTTP, consumers, NATS drain, db pool, and the ops port last, so readiness
 * answers 503 (not a refused connection) until the end. All of it runs within one deadline
 * that is shorter than the Kubernetes grace period. Each step is given the time left until
 * its own mark and is not waited for past it, so a slow step cannot use up the time of the
 * ones after it; the process exits when the whole deadline passes.
 *
 * A process behind a load balancer registers `unreadyFirst`: on SIGTERM it turns unready at
 * once and keeps serving for a delay before the deadline starts, so the balancer takes it out
 * before its port closes.
 */
export function createShutdown(logger: Logger, timeoutMs: number) {
  const steps: ShutdownStep[] = [];
  let unready: Unready | undefined;
  let running: Promise<void> | undefined;

  async function run(reason: string): Promise<void> {
    logger.info({ reason }, 'shutting down');
    if (unready) {
      unready.begin();
      // Only an orchestrator's SIGTERM: a developer's Ctrl-C (SIGINT) has no balancer to wait for.
      if (reason === 'SIGTERM' && unready.delayMs > 0) {
        logger.info({ delayMs: unready.delayMs }, 'unready; still serving until balancers notice');
        await sleep(unready.delayMs);
      }
    }
    const startedAt = Date.now();
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    const ordered = steps
      .map((step, index) => ({ step, index }))
      .sort((a, b) => a.step.doneBy - b.step.doneBy || b.index - a.index)
      .map(({ step }) => step);
    for (const step of ordered) {
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
    logger.info({ tookMs: Date.now() - startedAt }, 'stopped');
  }

  return {
    /**
     * Register a step; `close` is told how long it has. `doneBy` (default 1) is the share of
     * the deadline by which it must be done, leaving room for the steps that run after it.
     */
    add(name: string, close: (timeLeftMs: number) => Promise<void>, doneBy = 1): void {
      steps.push({ name, close, doneBy });
    },
    /**
     * What happens before any step: `begin` (stop being ready, ask clients to reconnect
     * elsewhere) at once, then, on SIGTERM, `delayMs` of serving as usual before the first
     * step closes anything. The deadline starts after the delay.
     */
    unreadyFirst(begin: () => void, delayMs: number): void {
      unready = { begin, delayMs };
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
