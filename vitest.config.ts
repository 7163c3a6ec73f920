import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
// Where `npm start` or `npm test` made the project's own NATS or Postgres (the default one
// refused it), importing the set-up puts their URLs into the environment, so `npx vitest` run
// directly uses the same servers.
import '@pcp/setup';

// Workspace packages resolve to their TypeScript sources (the `@pcp/source` export
// condition), so tests need no build step. No `module` condition: some dependencies' builds
// behind it are for bundlers only and do not load in Node.
const conditions = ['@pcp/source', 'node', 'development|production'];

/**
 * Files that run alone, after the rest: they load both cores themselves (the fuzz suites,
 * the fault suite's two replicas of everything, 100k-item compiles) or assert what a busy machine blurs (event-loop delay, a
 * grace period that must not pass). Every other file isolates its own database, stream and
 * subject prefix, and mostly waits on servers and processes, so two run at once.
 */
// (Each project names its own `include`: extending the root's would add to it.)
const runAlone = [
  'e2e/fuzz/**/*.test.ts',
  'e2e/faults/**/*.test.ts',
  'services/ordering/test/integration/catalog-cache.test.ts',
  'e2e/store-webhooks.e2e.test.ts',
];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    globalSetup: ['packages/testing/src/global-setup.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'side-by-side',
          include: [
            'packages/*/test/**/*.test.ts',
            'services/*/test/**/*.test.ts',
            'e2e/**/*.test.ts',
            'deploy/test/**/*.test.ts',
            'tools/*/test/**/*.test.ts',
          ],
          exclude: [...configDefaults.exclude, ...runAlone],
          // Vitest's default is one fewer than the cores: one file at a time on this 2-core machine.
          maxWorkers: Math.max(2, availableParallelism()),
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: runAlone, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
