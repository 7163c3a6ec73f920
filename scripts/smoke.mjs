// Smoke test (CI runs it after `npm test`; `node scripts/smoke.mjs` locally): `npm start` in the
// background, `npm run demo` (live, then `--sandbox`) and `pcp listen`/`pcp trigger` against it
// once ready, then Ctrl-C; exit 0 only when they passed and the platform stopped cleanly. The
// test itself: tools/platform/src/smoke.ts.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fail, root } from '../packages/setup/src/shell.mjs';
import { ensureDependencies, onBundledNode } from '../packages/setup/src/toolchain.mjs';

try {
  ensureDependencies();
  // CI runs this with the system's Node; the platform runs on the bundled one.
  await onBundledNode();
} catch (error) {
  fail(error);
}
const child = spawn(
  process.execPath,
  ['--conditions=@pcp/source', '--import', 'tsx', join(root, 'tools/platform/src/smoke.ts')],
  { cwd: root, stdio: 'inherit' },
);
// Ctrl-C reaches the child too (same process group); wait for its clean-up.
process.on('SIGINT', () => undefined);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
