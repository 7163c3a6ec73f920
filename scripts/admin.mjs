// `npm run admin -- <command>`: partner and API key administration (see README).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureDependencies, fail, root, run } from './lib/setup.mjs';

try {
  ensureDependencies();
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-b']);
} catch (error) {
  fail(error);
}
const cli = spawnSync(
  process.execPath,
  [join(root, 'services/gateway/dist/admin/cli.js'), ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
process.exit(cli.status ?? 1);
