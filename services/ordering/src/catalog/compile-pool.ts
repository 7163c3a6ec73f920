import type { Logger } from '@pcp/service-kit';
import { Piscina } from 'piscina';
import { openCompiledCatalog, type CompiledCatalog } from '../domain/compiled-catalog.js';
import type { CompileCatalogResult, CompileCatalogTask } from './compile-catalog.task.js';

// Tests run the TypeScript sources and production the compiled JavaScript: the task file is
// this file's sibling with the same extension, and a TypeScript one loads through tsx (with
// workspace packages resolved to their sources, as in the tests).
const runningTypeScript = import.meta.url.endsWith('.ts');
const TASK_FILE = new URL(
  `./compile-catalog.task.${runningTypeScript ? 'ts' : 'js'}`,
  import.meta.url,
).href;
const TYPESCRIPT_EXEC_ARGV = ['--conditions=@pcp/source', '--import', 'tsx'];

/** Threads with no task for this long exit, returning a large document's heap to the OS. */
const IDLE_THREAD_MS = 30_000;

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
    filename: TASK_FILE,
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: IDLE_THREAD_MS,
    resourceLimits: { maxOldGenerationSizeMb: options.heapMb },
    execArgv: runningTypeScript ? TYPESCRIPT_EXEC_ARGV : [],
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
