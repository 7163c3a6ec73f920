// @pcp/setup: the set-up shared by `npm start`, `npm test` and the other commands
// (dependencies, the bundled Node, local servers, the build), and by the tests and tools that
// need a part of it. Plain JavaScript typed with JSDoc: the commands in scripts/ import it by
// path and run it before `npm ci` has (only the server checks after ensureDependencies import
// `pg` and `nats`); TypeScript imports `@pcp/setup`. This file is its entry point. Importing it
// puts the project's own servers' URLs into the environment (server-urls.mjs), so every child
// process uses them.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureServers } from './servers.mjs';
import { fail, log, root, run } from './shell.mjs';
import {
  build,
  ensureChromium,
  ensureDependencies,
  ensurePromtool,
  onBundledNode,
} from './toolchain.mjs';

export { waitUntilAnswers } from './network.mjs';
export { asPostgresUser, giveToPostgresUser, postgresBinaries } from './own-postgres.mjs';
export { serverUrls } from './server-urls.mjs';
export { ensureDatabase, ensureServers } from './servers.mjs';
export { dataDir, fail, log, root, run, which } from './shell.mjs';
export { build, ensureDependencies, ensurePromtool, onBundledNode } from './toolchain.mjs';

/**
 * What `npm test` and `npm run test:fuzz` do before vitest: dependencies, the bundled Node,
 * servers, the test tools, the build, the tests' type check. `npm run test:quick` passes
 * `quick`: no browser or promtool (its tests need neither) and no type check (its inner loop
 * is for speed; `npm test` checks the types). Exits with a readable message when a step fails.
 * @param {{ quick?: boolean }} [options]
 */
export async function prepareTests({ quick = false } = {}) {
  try {
    ensureDependencies();
    await onBundledNode();
    await ensureServers({ dockerFallback: true });
    if (!quick) {
      ensurePromtool();
      ensureChromium();
    }
    build();
    if (!quick) {
      log('type-checking tests');
      run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.tests.json']);
    }
  } catch (error) {
    fail(error);
  }
}

/**
 * Run vitest on this Node (after prepareTests, the bundled one) with `args` (and `env` over
 * this process's) and exit with its status.
 */
export function runVitestAndExit(args, env = process.env) {
  const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
  const result = spawnSync(process.execPath, [vitest, 'run', ...args], {
    cwd: root,
    stdio: 'inherit',
    env,
  });
  process.exit(result.status ?? 1);
}
