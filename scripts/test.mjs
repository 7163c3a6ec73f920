// `npm test`: all set-up (dependencies, servers, build, type checks), then every test.
// Extra arguments go to vitest, e.g. `npm test -- e2e/`.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { build, ensureDependencies, ensureServers, fail, log, root, run } from './lib/setup.mjs';

try {
  ensureDependencies();
  await ensureServers({ dockerFallback: true });
  build();
  log('type-checking tests');
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.tests.json']);
} catch (error) {
  fail(error);
}
const vitest = spawnSync(
  join(root, 'node_modules', '.bin', 'vitest'),
  ['run', ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
process.exit(vitest.status ?? 1);
