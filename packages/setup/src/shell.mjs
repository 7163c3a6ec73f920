// The set-up's basics: where the checkout is, how it logs, runs commands and finds binaries.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (this file is in packages/setup/src). */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The project's own servers' data and logs (git-ignored). */
export const dataDir = join(root, '.data');

/** The one command that installs the servers, for the messages that need it. */
export const INSTALL_HINT =
  'apt-get update && apt-get install -y nats-server redis-server postgresql';

/**
 * One line of the set-up's output.
 * @param {string} message
 */
export function log(message) {
  process.stdout.write(`[setup] ${message}\n`);
}

/**
 * Run a command to its end, its output on this terminal; throws when it fails.
 * @param {string} command
 * @param {readonly string[]} args
 * @param {import('node:child_process').SpawnSyncOptions} [options]
 */
export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
  }
}

/**
 * The absolute path of `binary` on PATH (or the sbin folders), if there is one.
 * @param {string} binary
 * @returns {string | undefined}
 */
export function which(binary) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin'];
  return dirs.map((dir) => join(dir, binary)).find((path) => existsSync(path));
}

/** Start a server in the background, detached, logging under .data/. */
export function startDetached(name, command, args) {
  mkdirSync(dataDir, { recursive: true });
  const out = openSync(join(dataDir, `${name}.log`), 'a');
  spawn(command, args, { cwd: root, detached: true, stdio: ['ignore', out, out] }).unref();
}

/**
 * Print the error as one readable message and exit non-zero.
 * @param {unknown} error
 * @returns {never}
 */
export function fail(error) {
  process.stderr.write(`\n[setup] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
