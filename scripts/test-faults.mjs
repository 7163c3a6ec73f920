// `npm run test:faults`: the fault suite (e2e/faults). Two replicas of every service as
// processes on the suite's own NATS, PostgreSQL and Redis, a seeded workload, and each fault
// injected and recovered in turn; then a table of faults × invariants (checked/violated).
// FAULT_PROFILE=short|full|mutation (default full, ≤ ~10 min; `npm run test:resilience` runs the short one),
// FAULT_SEED=<n> replays a run's choices, FAULT_ONLY="SIGKILL ordering,restart nats" picks faults.
// Exit code 1 on any violation, 2 when the suite could not run.
// `npm run test:faults -- --mutants[=saga-no-release,…] [--no-control]`: the mutation check
// (e2e/faults/mutation.ts): the mutation profile without a defect, which must pass (else exit
// 2), then once per planted defect, each of which must fail it (else exit 1).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  build,
  ensureDependencies,
  fail,
  onBundledNode,
  root,
} from '../packages/setup/src/index.mjs';

try {
  ensureDependencies();
  await onBundledNode();
  // The services run from their builds, as in production.
  build();
} catch (error) {
  fail(error);
}

const child = spawn(
  process.execPath,
  [
    '--conditions=@pcp/source',
    '--import',
    'tsx',
    join(root, 'e2e', 'faults', 'run.ts'),
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, FAULT_PROFILE: process.env.FAULT_PROFILE ?? 'full' },
  },
);
// Ctrl-C reaches the child too (same process group); wait for its clean-up.
process.on('SIGINT', () => undefined);
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0);
});
