import { defineConfig } from 'vitest/config';
// Where `npm start` or `npm test` made the project's own NATS or Postgres (the default one
// refused it), importing the set-up puts their URLs into the environment, so `npx vitest` run
// directly uses the same servers.
import './scripts/lib/setup.mjs';

// Workspace packages resolve to their TypeScript sources (the `@pcp/source` export
// condition), so tests need no build step. No `module` condition: some dependencies' builds
// behind it are for bundlers only and do not load in Node.
const conditions = ['@pcp/source', 'node', 'development|production'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'services/*/test/**/*.test.ts',
      'e2e/**/*.test.ts',
      'deploy/test/**/*.test.ts',
      'tools/*/test/**/*.test.ts',
    ],
    globalSetup: ['packages/testing/src/global-setup.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
