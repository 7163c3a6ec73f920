/**
 * Where a worker thread's task module is, next to the module that starts the pool: tests run
 * the TypeScript sources and production the compiled JavaScript, so the task file takes the
 * caller's extension, and a TypeScript one loads through tsx (with workspace packages
 * resolved to their sources, as in the tests). Spread into a worker pool's options.
 */
export function siblingWorkerTask(
  callerUrl: string,
  taskName: string,
): { filename: string; execArgv: string[] } {
  const runningTypeScript = callerUrl.endsWith('.ts');
  return {
    filename: new URL(`./${taskName}.${runningTypeScript ? 'ts' : 'js'}`, callerUrl).href,
    execArgv: runningTypeScript ? ['--conditions=@pcp/source', '--import', 'tsx'] : [],
  };
}

/** Threads with no task for this long exit, returning a large document's heap to the OS. */
export const IDLE_WORKER_THREAD_MS = 30_000;
