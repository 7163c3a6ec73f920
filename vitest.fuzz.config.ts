import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:fuzz`: only the fuzz suites, at full size (FUZZ_RUNS, set by
// scripts/test-fuzz.mjs), one file at a time so each gets the machine's cores and its
// processes' memory is its own. `npm run test:resilience` runs the same files with few runs. (Spread, not
// mergeConfig: that concatenates `include` with the base's every test; and without the
// base's two projects, which would bring their own `include`.)
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    projects: undefined,
    include: ['e2e/fuzz/**/*.fuzz.test.ts'],
    fileParallelism: false,
    testTimeout: 600_000,
  },
});
