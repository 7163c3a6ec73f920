import type { Logger } from './logger.js';

/**
 * Ordered shutdown: resources register a close step as they are acquired and are closed in
 * reverse order (HTTP, consumers, NATS drain, db pool), all within one deadline that is
 * shorter than the Kubernetes grace period.
 */
export function createShutdown(logger: Logger, timeoutMs: number) {
  const steps: { name: string; close: () => Promise<void> }[] = [];
  let running: Promise<void> | undefined;

  async function run(reason: string): Promise<void> {
    logger.info({ reason }, 'shutting down');
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    for (const step of steps.reverse()) {
      try {
        await step.close();
      } catch (error) {
        logger.error({ err: error, step: step.name }, 'shutdown step failed');
      }
    }
    clearTimeout(deadline);
    logger.info('stopped');
  }

  return {
    add(name: string, close: () => Promise<void>): void {
      steps.push({ name, close });
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
