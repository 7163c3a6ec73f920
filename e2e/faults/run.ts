// The fault suite's command line (scripts/test-faults.mjs runs it): FAULT_PROFILE
// short|full|mutation (default full), FAULT_SEED to replay a run, FAULT_ONLY a comma-separated
// list of faults. `--mutants` runs the mutation check instead (mutation.ts): the mutation
// profile without a defect (the control; `--no-control` skips it), then once per planted
// defect (`--mutants=saga-no-release,refund-twice` picks some), each of which must fail it.
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { formatMutationCheck, runMutationCheck } from './mutation.js';
import { formatReport, PROFILES, runFaultSuite, type ProfileName } from './suite.js';

const fail = (message: string): never => {
  process.stderr.write(`${message}\n`);
  process.exit(2);
};

let args;
try {
  args = parseArgs({
    options: { mutants: { type: 'string' }, 'no-control': { type: 'boolean' } },
    args: process.argv.slice(2).map((arg) => (arg === '--mutants' ? '--mutants=' : arg)),
  }).values;
} catch (error) {
  fail(
    `${(error as Error).message}\nusage: npm run test:faults [-- --mutants[=a,b] [--no-control]]`,
  );
}
const profile = process.env.FAULT_PROFILE ?? 'full';
if (!(profile in PROFILES)) fail(`FAULT_PROFILE must be short, full or mutation, not ${profile}`);
const seedText = process.env.FAULT_SEED;
if (seedText !== undefined && !/^\d{1,10}$/.test(seedText)) {
  fail(`FAULT_SEED must be a whole number, not ${seedText}`);
}
const seed = seedText === undefined ? randomInt(2 ** 31) : Number(seedText) >>> 0;
const only = process.env.FAULT_ONLY?.split(',')
  .map((name) => name.trim())
  .filter(Boolean);
const list = (text: string | undefined) =>
  text
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean);

try {
  if (args?.mutants !== undefined) {
    const log = (line: string) => process.stdout.write(`[mutants] ${line}\n`);
    const check = await runMutationCheck({
      seed,
      mutants: list(args.mutants),
      control: !args['no-control'],
      only,
      log,
    });
    process.stdout.write(`\n${formatMutationCheck(check, seed)}\n`);
    const survived = check.results.some((result) => !result.killedIn && !result.error);
    if (check.control && check.control.violated > 0) {
      process.stdout.write(`Logs kept in ${check.control.logDir}\n`);
      process.exitCode = 2;
    } else if (survived) {
      process.exitCode = 1;
    } else {
      // A mutant whose platform could not run was neither killed nor seen to survive.
      process.exitCode = check.results.some((result) => result.error) ? 2 : 0;
    }
  } else {
    const result = await runFaultSuite({
      profile: profile as ProfileName,
      seed,
      only,
      keepLogsOnViolation: true,
    });
    process.stdout.write(`\n${formatReport(result)}\n`);
    if (result.violated > 0) process.stdout.write(`Logs kept in ${result.logDir}\n`);
    process.exitCode = result.violated > 0 ? 1 : 0;
  }
} catch (error) {
  process.stderr.write(
    `\nthe fault suite could not run (seed ${seed}): ${(error as Error).stack ?? String(error)}\n`,
  );
  process.exitCode = 2;
}
