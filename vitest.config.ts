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
 * The projects (docs/testing.md). `npm test` runs all but `resilience`, which
 * `npm run test:resilience` runs; `npm run test:quick` runs `quick` and `quick-isolated`.
 *
 * `quick`: unit and in-process service tests, no process of the platform.
 */
const quick = ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts'];
/** Files of `quick` that start a command of the platform as a process (from its build). */
const quickButProcesses = [
  'packages/client/test/pcp-catalog.test.ts',
  'services/gateway/test/integration/admin-cli.test.ts',
];
/**
 * Files that set process-wide state a later file in the same worker would inherit: the
 * tracer provider, started once per process with the first caller's span processors.
 */
const quickIsolated = [
  'packages/service-kit/test/logger.test.ts',
  'packages/service-kit/test/message-tracing.test.ts',
  'packages/service-kit/test/safe-fetch-tracing.test.ts',
];
/** The platform's files that start the tracer provider (see `quickIsolated`). */
const platformIsolated = ['e2e/log-hygiene.e2e.test.ts', 'e2e/tracing.e2e.test.ts'];
/**
 * Files that run one at a time after the rest: they load both cores themselves (100k-item
 * compiles) or assert what a busy machine blurs (event-loop delay, a grace period that must
 * not pass).
 */
const alone = [
  'services/ordering/test/integration/catalog-cache.test.ts',
  'e2e/store-webhooks.e2e.test.ts',
];
/** The short fault profile and the fuzz suites' short form: CI runs them as their own step. */
const resilience = ['e2e/fuzz/**/*.test.ts', 'e2e/faults/**/*.test.ts'];

/**
 * One more file at a time than there are cores: the files mostly wait on servers, processes
 * and timers (a run keeps about one core of two busy), so a third keeps the cores working.
 */
const workers = availableParallelism() + 1;

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    globalSetup: ['packages/testing/src/global-setup.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // (Each project names its own `include`: extending the root's would add to it.)
    projects: [
      {
        extends: true,
        test: {
          name: 'quick',
          include: quick,
          exclude: [...configDefaults.exclude, ...quickButProcesses, ...quickIsolated, ...alone],
          // Every file keeps its data apart by database, stream and prefix, not by module
          // instance: a worker keeps the modules it loaded for its next file, so the services
          // and their dependencies are imported once per worker rather than once per file.
          isolate: false,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'quick-isolated',
          include: quickIsolated,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'platform',
          include: [
            ...quickButProcesses,
            'e2e/**/*.test.ts',
            'deploy/test/**/*.test.ts',
            'tools/*/test/**/*.test.ts',
          ],
          exclude: [...configDefaults.exclude, ...platformIsolated, ...alone, ...resilience],
          isolate: false,
          // Mostly waiting on servers and processes: as many at a time as there are cores.
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'platform-isolated',
          include: platformIsolated,
          maxWorkers: workers,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: alone, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: {
          name: 'resilience',
          include: resilience,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
