// `npm run test:resilience`: the short fault profile (e2e/faults: two replicas of every
// service as processes, each fault injected and recovered in turn) and the fuzz suites' short
// form (e2e/fuzz, FUZZ_RUNS 12 on a fixed seed), one file at a time. `npm run test:faults` and
// `npm run test:fuzz` run their full forms. CI runs this beside `npm test`.
import { prepareTests, runVitestAndExit } from '../packages/setup/src/index.mjs';

await prepareTests();
runVitestAndExit(['--project', 'resilience', ...process.argv.slice(2)]);
