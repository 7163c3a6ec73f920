// The fault suite's command line (scripts/test-faults.mjs runs it): FAULT_PROFILE short|full
// (default full), FAULT_SEED to replay a run, FAULT_ONLY a comma-separated list of faults.
import { randomInt } from 'node:crypto';
import { formatReport, runFaultSuite } from './suite.js';

const profile = process.env.FAULT_PROFILE ?? 'full';
if (profile !== 'short' && profile !== 'full') {
  process.stderr.write(`FAULT_PROFILE must be short or full, not ${profile}\n`);
  process.exit(2);
}
const seedText = process.env.FAULT_SEED;
if (seedText !== undefined && !/^\d{1,10}$/.test(seedText)) {
  process.stderr.write(`FAULT_SEED must be a whole number, not ${seedText}\n`);
  process.exit(2);
}
const seed = seedText === undefined ? randomInt(2 ** 31) : Number(seedText) >>> 0;
const only = process.env.FAULT_ONLY?.split(',')
  .map((name) => name.trim())
  .filter(Boolean);

try {
  const result = await runFaultSuite({ profile, seed, only, keepLogsOnViolation: true });
  process.stdout.write(`\n${formatReport(result)}\n`);
  if (result.violated > 0) process.stdout.write(`Logs kept in ${result.logDir}\n`);
  process.exitCode = result.violated > 0 ? 1 : 0;
} catch (error) {
  process.stderr.write(
    `\nthe fault suite could not run (seed ${seed}): ${(error as Error).stack ?? String(error)}\n`,
  );
  process.exitCode = 2;
}
