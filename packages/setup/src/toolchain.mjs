// What the commands need besides the servers: the dependencies, the Node they run on, promtool
// and the build.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { log, root, run, which } from './shell.mjs';

/**
 * `npm ci` when node_modules is missing or older than the lock file; its output only when it
 * fails. On a fresh machine it runs on the system's Node, before the bundled Node 24 exists,
 * so npm would warn that the project and some packages want a newer Node (EBADENGINE): they
 * run on the bundled one, never on this.
 */
export function ensureDependencies() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  log('installing dependencies (npm ci)');
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
    throw new Error(`npm ci failed (exit ${result.status ?? result.signal})`);
  }
}

const bin = join(root, 'node_modules', '.bin');
/** The Node every process of the platform runs on: the root's `node` devDependency. */
export const bundledNode = join(bin, 'node');

/**
 * Returns on the bundled Node only: from any other Node (the system's, which starts the first
 * `npm test` of a fresh clone, before `npm ci` installed the bundled one) it runs this command
 * again on the bundled Node and exits with its status. Call it after ensureDependencies; every
 * process after inherits it (children are spawned with process.execPath), and
 * node_modules/.bin goes first on PATH for the tools' `#!/usr/bin/env node` scripts.
 * @returns {Promise<void>}
 */
export function onBundledNode() {
  if (!existsSync(bundledNode)) {
    throw new Error(
      `${bundledNode} is missing: npm ci did not run the \`node\` package's install script ` +
        '(package.json allowScripts approves it)',
    );
  }
  const path = process.env.PATH ?? '';
  if (path.split(delimiter)[0] !== bin) process.env.PATH = `${bin}${delimiter}${path}`;
  if (realpathSync(process.execPath) === realpathSync(bundledNode)) return Promise.resolve();
  log(`this is Node ${process.version}: running again on node_modules/.bin/node`);
  const child = spawn(bundledNode, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  // Ctrl-C reaches the child too (same process group); a signal sent to this process alone is
  // passed on. Either way this exits when the child does.
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return new Promise(() => undefined);
}

/**
 * `binary` from Debian's `debianPackage`, which `purpose` needs: installed with apt-get where
 * this is root on Debian, else a failure naming the command.
 * @param {string} binary
 * @param {string} debianPackage
 * @param {string} purpose
 */
function ensureDebianPackage(binary, debianPackage, purpose) {
  if (which(binary)) return;
  const install = `apt-get install -y --no-install-recommends ${debianPackage}`;
  const canInstall = process.getuid?.() === 0 && which('apt-get');
  if (!canInstall) {
    throw new Error(`${binary} is not installed (${purpose}). Install it with:\n  ${install}`);
  }
  log(`installing ${debianPackage} (${binary}, for ${purpose})`);
  const quiet = {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  };
  run('apt-get', ['update', '-qq'], quiet);
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', debianPackage], quiet);
}

/** promtool (Debian's `prometheus` package), which the alert rule and dashboard tests run. */
export function ensurePromtool() {
  ensureDebianPackage('promtool', 'prometheus', 'the alert rule tests');
}

/**
 * Debian's Chromium, which the console's browser tests drive (e2e/console: playwright-core
 * downloads no browser of its own).
 */
export function ensureChromium() {
  ensureDebianPackage('chromium', 'chromium', "the console's browser tests");
}

/**
 * Incremental TypeScript build of every package (fast when nothing changed), then the
 * partner console's static files when its sources changed.
 * @returns {void}
 */
export function build() {
  log('building (tsc -b)');
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-b']);
  buildConsole();
}

const consoleDir = join(root, 'packages', 'console');

/**
 * The newest modification time under `path` (a file, or a folder walked whole).
 * @param {string} path
 * @returns {number}
 */
function newestChange(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce(
    (newest, name) => Math.max(newest, newestChange(join(path, name))),
    stat.mtimeMs,
  );
}

/**
 * `vite build` of the partner console into packages/console/dist, which the gateway serves
 * at /console; skipped when the build is newer than its sources, the client module it
 * imports and the lock file.
 * @returns {void}
 */
function buildConsole() {
  const built = join(consoleDir, 'dist', 'index.html');
  const sources = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json']
    .map((name) => join(consoleDir, name))
    // The one runtime module the console takes from another workspace package.
    .concat(join(root, 'packages', 'contracts', 'src', 'orderable-items.ts'))
    .concat(join(root, 'package-lock.json'));
  const newestSource = Math.max(...sources.map(newestChange));
  if (existsSync(built) && statSync(built).mtimeMs >= newestSource) return;
  log('building the console (vite build)');
  run(join(root, 'node_modules', '.bin', 'vite'), ['build'], { cwd: consoleDir });
}
