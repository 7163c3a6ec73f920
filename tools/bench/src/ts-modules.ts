// Running this workspace's TypeScript modules as processes and worker threads, from source.
import { join } from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Node's arguments to run `file` (relative to src/) from its source. */
export const tsEntry = (file: string) => [
  '--import',
  'tsx',
  '--conditions=@pcp/source',
  join(import.meta.dirname, file),
];

const tsxApi = import.meta.resolve('tsx/esm/api');

/** A worker thread running the TypeScript module `file` (tsx's hooks are per thread). */
export function tsWorker(file: URL, options: WorkerOptions): Worker {
  const code =
    `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); ` +
    `return import(${JSON.stringify(file.href)}); });`;
  return new Worker(code, { ...options, eval: true });
}
