import { IDLE_WORKER_THREAD_MS, siblingWorkerTask, type Logger } from '@pcp/service-kit';
import { Piscina } from 'piscina';
import { openCompiledCatalog, type CompiledCatalog } from './compiled-catalog.js';
import type { CompileCatalogResult, CompileCatalogTask } from './compile-catalog.task.js';

export interface CatalogCompilePool {
  /**
   * Parse, check and compile a CatalogSet document on a worker thread. `bytes` must span its
   * whole ArrayBuffer; it is transferred, so the caller must not use it afterwards. Resolves
   * `undefined` when the document is not a CatalogSet.
   */
  compile(bytes: Uint8Array, versionId: string): Promise<CompiledCatalog | undefined>;
  close(): Promise<void>;
}

export function createCatalogCompilePool(options: {
  /** Documents compiled at once. */
  threads: number;
  /** Old-generation heap of each thread, so one document cannot exhaust the process. */
  heapMb: number;
  logger: Logger;
}): CatalogCompilePool {
  const pool = new Piscina<CompileCatalogTask, CompileCatalogResult>({
    ...siblingWorkerTask(import.meta.url, 'compile-catalog.task'),
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: IDLE_WORKER_THREAD_MS,
    resourceLimits: { maxOldGenerationSizeMb: options.heapMb },
  });
  // Errors outside any task (a thread that fails while idle); a task's own error rejects it.
  pool.on('error', (error: unknown) =>
    options.logger.error({ err: error }, 'catalog compile thread failed'),
  );
  return {
    async compile(bytes, versionId) {
      if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) {
        throw new Error('the compile pool needs bytes that span their whole ArrayBuffer');
      }
      const buffer = bytes.buffer as ArrayBuffer;
      const result = await pool.run({ bytes: buffer, versionId }, { transferList: [buffer] });
      return result.outcome === 'compiled' ? openCompiledCatalog(result.catalog) : undefined;
    },
    close: () => pool.destroy(),
  };
}
