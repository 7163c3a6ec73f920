// `npm run test:quick`: the inner loop. Unit and in-process service tests (the `quick`
// projects of vitest.config.ts: no process of the platform, no browser), after the set-up
// they need. Extra arguments go to vitest, e.g. `npm run test:quick -- services/ordering`.
import { prepareTests, runVitestAndExit } from '../packages/setup/src/index.mjs';

await prepareTests({ quick: true });
runVitestAndExit(['--project', 'quick', '--project', 'quick-isolated', ...process.argv.slice(2)]);
