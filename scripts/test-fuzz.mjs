// `npm run test:fuzz`: the same set-up as `npm test`, then the fuzz suites (e2e/fuzz) at
// full size. FUZZ_RUNS (default 300) sets the cases per property; every run prints its
// FUZZ_SEED, and `FUZZ_SEED=<seed> npm run test:fuzz` replays it. Extra arguments go to
// vitest, e.g. `npm run test:fuzz -- e2e/fuzz/catalog.fuzz.test.ts`.
import { log, prepareTests, runVitestAndExit } from '../packages/setup/src/index.mjs';

const DEFAULT_RUNS = '300';

await prepareTests();
const env = { ...process.env, FUZZ_RUNS: process.env.FUZZ_RUNS ?? DEFAULT_RUNS };
log(`fuzzing with FUZZ_RUNS=${env.FUZZ_RUNS}${env.FUZZ_SEED ? ` FUZZ_SEED=${env.FUZZ_SEED}` : ''}`);
runVitestAndExit(['--config', 'vitest.fuzz.config.ts', ...process.argv.slice(2)], env);
