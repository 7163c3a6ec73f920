// `npm start`: all set-up (it may run `npm ci` first, hence plain JS here), then the platform
// as supervised processes (tools/platform/src/start.ts). Ctrl-C stops everything cleanly.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  build,
  ensureDatabase,
  ensureDependencies,
  ensureServers,
  fail,
  onBundledNode,
  root,
} from '../packages/setup/src/index.mjs';

try {
  ensureDependencies();
  await onBundledNode();
  await ensureServers();
  await ensureDatabase();
  build();
} catch (error) {
  fail(error);
}

const child = spawn(
  process.execPath,
  ['--conditions=@pcp/source', '--import', 'tsx', join(root, 'tools/platform/src/start.ts')],
  { cwd: root, stdio: 'inherit' },
);
// Ctrl-C reaches the child too (same process group); a signal sent to this process alone
// (`kill`, the smoke test) is passed on. The child stops the platform and exits.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
