// `npm run dev -w services/<name>`: that one service from its TypeScript sources (and the
// workspace packages' sources), restarted on every change, with the debugger listening.
// Arguments go to node before the entry file, e.g. `-- --inspect-brk=127.0.0.1:9230`.
import { spawn } from 'node:child_process';
import { basename, join } from 'node:path';
import {
  ensureDatabase,
  ensureDependencies,
  ensureServers,
  fail,
  log,
  onBundledNode,
} from '../packages/setup/src/index.mjs';

const service = basename(process.cwd());
const nodeArgs = process.argv.slice(2);
// Loopback by default: a debugger port lets whoever reaches it run code in the process.
const inspect = nodeArgs.some((arg) => arg.startsWith('--inspect'))
  ? []
  : ['--inspect=127.0.0.1:9229'];

try {
  ensureDependencies();
  await onBundledNode();
  await ensureServers();
  await ensureDatabase();
} catch (error) {
  fail(error);
}

log(`${service} from source in watch mode (node --watch); Ctrl-C stops it`);
const child = spawn(
  process.execPath,
  [
    '--watch',
    ...inspect,
    ...nodeArgs,
    '--conditions=@pcp/source',
    '--import',
    'tsx',
    // The environment `npm start` gives it, for what is not set already.
    '--import',
    '@pcp/platform/local-defaults',
    // Patches pg, redis, http and undici before the service loads them (tracing).
    '--import',
    '@pcp/service-kit/instrument',
    join('src', 'main.ts'),
  ],
  { stdio: 'inherit' },
);
// Ctrl-C reaches the child too (same process group); wait for it to stop before exiting.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
