import type { ValidationContext } from '@pcp/catalog-validation';
import { IDLE_WORKER_THREAD_MS, siblingWorkerTask, type Logger } from '@pcp/service-kit';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import {
  PARSED,
  type DryRunCatalogResult,
  type PrepareCatalogResult,
  type PrepareCatalogTask,
} from './prepare-catalog.task.js';

export interface CatalogPreparationPool {
  /**
   * Parse, validate, serialize and hash a downloaded document on a worker thread. `bytes`
   * must span its whole ArrayBuffer (safeFetch's body does); it is transferred, so the caller
   * must not use it afterwards. `onParsed` runs once the bytes are valid JSON.
   */
  prepare(
    bytes: Uint8Array,
    context: ValidationContext,
    onParsed: () => void,
  ): Promise<PrepareCatalogResult>;
  /**
   * Parse and validate a downloaded document on a worker thread, and price a valid one (a
   * dry run: nothing is serialized for storing). Same `bytes` rules as `prepare`. It waits
   * for a thread like any ingest does.
   */
  dryRun(bytes: Uint8Array, context: ValidationContext): Promise<DryRunCatalogResult>;
  close(): Promise<void>;
}

export function createCatalogPreparationPool(options: {
  /** Documents prepared at once (the service's ingest concurrency). */
  threads: number;
  /** Old-generation heap of each thread, so one document cannot exhaust the process. */
  heapMb: number;
  logger: Logger;
}): CatalogPreparationPool {
  const pool = new Piscina<PrepareCatalogTask, PrepareCatalogResult | DryRunCatalogResult>({
    ...siblingWorkerTask(import.meta.url, 'prepare-catalog.task'),
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: IDLE_WORKER_THREAD_MS,
    resourceLimits: { maxOldGenerationSizeMb: options.heapMb },
  });
  // Errors outside any task (a thread that fails while idle); a task's own error rejects it.
  pool.on('error', (error: unknown) =>
    options.logger.error({ err: error }, 'catalog preparation thread failed'),
  );

  /** The whole ArrayBuffer of `bytes`, which the task takes over. */
  function transferable(bytes: Uint8Array): ArrayBuffer {
    if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) {
      throw new Error('the preparation pool needs bytes that span their whole ArrayBuffer');
    }
    return bytes.buffer as ArrayBuffer;
  }

  return {
    async prepare(bytes, context, onParsed) {
      const buffer = transferable(bytes);
      const { port1, port2 } = new MessageChannel();
      port1.on('message', (message) => {
        if (message === PARSED) onParsed();
      });
      try {
        return (await pool.run(
          { bytes: buffer, context, purpose: 'activation', progress: port2 },
          { transferList: [buffer, port2] },
        )) as PrepareCatalogResult;
      } finally {
        port1.close();
      }
    },
    async dryRun(bytes, context) {
      const buffer = transferable(bytes);
      return pool.run({ bytes: buffer, context, purpose: 'dry-run' }, { transferList: [buffer] });
    },
    close: () => pool.destroy(),
  };
}
