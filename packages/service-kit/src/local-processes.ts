/**
 * The platform's processes on this checkout, started from their builds as the image starts
 * them, and free ports for them: for the launcher (`tools/platform`) and the tests that run a
 * service as a process (`packages/testing`). No service imports it: a subpath of its own
 * (`@pcp/service-kit/local-processes`), like the instrumentation.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { PlatformProcess } from '@pcp/contracts';

/** The repository's root (this file is in packages/service-kit/src or dist). */
export const repositoryRoot = join(import.meta.dirname, '..', '..', '..');

/** Its build's entry point (`node <entry>`; `node <entry> migrate` for the database owners). */
export function entryOf(name: PlatformProcess): string {
  return join(repositoryRoot, 'services', name, 'dist', 'main.js');
}

/** How a process's Node is started (see `nodeArgsOf`). */
export interface NodeOptions {
  /**
   * Preload the tracing instrumentation as the image does (`NODE_OPTIONS`): it patches pg, redis,
   * http and undici before the service loads them. Default true.
   */
  readonly instrument?: boolean;
  /** Node flags before the entry, e.g. `--cpu-prof`. */
  readonly nodeFlags?: readonly string[];
}

/**
 * Node's arguments for a process from its build. A process starts from its build in a fraction
 * of the CPU time it takes from sources through tsx.
 */
export function nodeArgsOf(name: PlatformProcess, options: NodeOptions = {}): string[] {
  const { instrument = true, nodeFlags = [] } = options;
  return [
    ...nodeFlags,
    ...(instrument ? ['--import', '@pcp/service-kit/instrument'] : []),
    entryOf(name),
  ];
}

/** Ports handed out by this process, so two launches (or replicas) never get the same one. */
const handedOut = new Set<number>();

/** Whether nothing listens on `port` now (it could be bound on 127.0.0.1). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port nothing listens on, below the kernel's ephemeral range (32768 and up on Linux): a
 * port the system hands out for port 0 is one that any outgoing connection may take before
 * the service binds it, as benches under load saw (EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!handedOut.has(port) && (await bindable(port))) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port between 20000 and 32000');
}
