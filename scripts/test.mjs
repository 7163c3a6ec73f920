// `npm test`: all set-up (dependencies, servers, build, type checks), then every test.
// Extra arguments go to vitest, e.g. `npm test -- e2e/`.
import { prepareTests, runVitestAndExit } from '../packages/setup/src/index.mjs';

await prepareTests();
runVitestAndExit(process.argv.slice(2));
