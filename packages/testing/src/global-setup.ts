import type { TestProject } from 'vitest/node';
import type { ServerUrls } from './servers.js';
import type { prepareTestRun } from './test-run.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    servers: ServerUrls;
  }
}

/** The run's preparation, shared by every project's call of this setup (see `setup`). */
interface SharedPreparation {
  preparation: ReturnType<typeof prepareTestRun>;
  users: number;
}
const SHARED = Symbol.for('pcp.test-run');
const registry = globalThis as { [SHARED]?: SharedPreparation };

/**
 * Vitest's global setup, called for the root and again for each project it runs, each time
 * from a fresh copy of this module: the projects share one preparation (test-run.ts: the
 * servers and a migrated template database), kept on `globalThis` and torn down after the
 * last of them. This module imports nothing heavy, so a project's call costs nothing more.
 */
export default async function setup(project: TestProject) {
  const shared = (registry[SHARED] ??= {
    preparation: import('./test-run.js').then(({ prepareTestRun }) => prepareTestRun()),
    users: 0,
  });
  shared.users += 1;
  const { urls, template, teardown } = await shared.preparation;
  project.provide('servers', urls);
  project.provide('templateDatabase', template);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete registry[SHARED];
    await teardown();
  };
}
