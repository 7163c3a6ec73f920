// `npm test -w <workspace>` (e.g. `npm test -w services/stores`): the root's set-up, then only
// that workspace's type check and tests, so a team does not wait on, or trip over, the others'.
// Extra arguments go to vitest, e.g. `npm test -w services/stores -- test/unit -t hours` (paths
// within the workspace).
import { join, relative } from 'node:path';
import {
  ensureDependencies,
  ensureServers,
  fail,
  log,
  onBundledNode,
  root,
  run,
} from '../packages/setup/src/index.mjs';

// npm runs a workspace's script in that workspace's folder.
const workspace = relative(root, process.cwd()).replaceAll('\\', '/');
const tsc = join(root, 'node_modules', '.bin', 'tsc');

// The vitest global setup (packages/testing/src/test-run.ts) migrates these services' schemas
// into the template database from their built dist, so those must be current.
const globalSetupProjects = ['gateway', 'stores', 'catalog', 'ordering', 'payments'].map(
  (service) => `services/${service}`,
);

try {
  if (!/^(packages|services)\/[^/]+$/.test(workspace)) {
    throw new Error(`run this as \`npm test -w <workspace>\`, not from ${process.cwd()}`);
  }
  ensureDependencies();
  await onBundledNode();
  await ensureServers({ dockerFallback: true });
  log(`building what the test set-up loads (tsc -b ${globalSetupProjects.join(' ')})`);
  run(tsc, ['-b', ...globalSetupProjects]);
  log(`type-checking ${workspace} (its sources and tests)`);
  run(tsc, ['-p', join(workspace, 'tsconfig.test.json')]);
} catch (error) {
  fail(error);
}

// The root config (servers, global setup, conditions, timeouts, projects), narrowed to this
// workspace's tests by path filters: each project names its own `include`, so overriding the
// root's would narrow nothing. Filters in the arguments are paths within the workspace.
const { parseCLI, startVitest } = await import('vitest/node');
const { filter, options } = parseCLI(['vitest', 'run', ...process.argv.slice(2)]);
const within = filter.length > 0 ? filter : ['test/'];
const vitest = await startVitest(
  'test',
  within.map((path) => `${workspace}/${path.replace(/^\.?\//, '')}`),
  { ...options, root },
);
await vitest.close();
