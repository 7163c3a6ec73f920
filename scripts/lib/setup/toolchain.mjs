// What the commands need besides the servers: the dependencies, promtool and the build.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { log, root, run, which } from './shell.mjs';

/** `npm ci` when node_modules is missing or older than the lock file. */
export function ensureDependencies() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  log('installing dependencies (npm ci)');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

const PROMTOOL_INSTALL = 'apt-get install -y --no-install-recommends prometheus';

/**
 * promtool (Debian's `prometheus` package), which the alert rule and dashboard tests run:
 * installed with apt-get where this is root on Debian, else a failure naming the command.
 */
export function ensurePromtool() {
  if (which('promtool')) return;
  const canInstall = process.getuid?.() === 0 && which('apt-get');
  if (!canInstall) {
    throw new Error(
      `promtool is not installed (the alert rule tests run it). Install it with:\n  ${PROMTOOL_INSTALL}`,
    );
  }
  log('installing prometheus (promtool, for the alert rule tests)');
  const quiet = {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  };
  run('apt-get', ['update', '-qq'], quiet);
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'prometheus'], quiet);
}

/**
 * Incremental TypeScript build of every package (fast when nothing changed).
 * @returns {void}
 */
export function build() {
  log('building (tsc -b)');
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-b']);
}
