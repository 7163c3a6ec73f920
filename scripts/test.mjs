// `npm test`: all set-up (dependencies, servers, build, type checks), then every test but the
// short fault profile and the fuzz suites' short form, which `npm run test:resilience` runs
// (CI runs both). Extra arguments go to vitest, e.g. `npm test -- e2e/`.
import { prepareTests, runVitestAndExit } from '../packages/setup/src/index.mjs';

await prepareTests();
runVitestAndExit(['--project', '!resilience', ...process.argv.slice(2)]);
