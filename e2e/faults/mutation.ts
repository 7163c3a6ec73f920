import type { OrderingConfig } from '@pcp/ordering';
import type { PaymentsConfig } from '@pcp/payments';
import { formatReport, runFaultSuite, type SuiteResult } from './suite.js';

type OrderingMutant = NonNullable<OrderingConfig['ORDERING_TEST_MUTANT']>;
type PaymentsMutant = NonNullable<PaymentsConfig['PAYMENTS_TEST_MUTANT']>;

/** A defect planted by a test-only flag on one service (production refuses the flags). */
export interface Mutant {
  readonly name: OrderingMutant | PaymentsMutant;
  readonly service: 'ordering' | 'payments';
  /** What the defect does, for the table. */
  readonly what: string;
}

/** Every mutant the services know (the records make the compiler ask for a new one). */
const ordering: Record<OrderingMutant, string> = {
  'saga-no-release':
    "the saga's release of a final failure removed (a store's refusal keeps its hold)",
  'cancel-no-refund': "a store's cancel owes no refund",
  'owners-torn': 'the charge-owners reads swapped, outside one snapshot',
  'capture-skipped': 'place records the order without capturing its charge',
  'acceptance-no-refund': 'the acceptance window cancels without a refund',
};
const payments: Record<PaymentsMutant, string> = {
  'refund-twice': 'every processor refund call under a fresh key (a retry is a new refund)',
};

export const MUTANTS: readonly Mutant[] = [
  ...Object.entries(ordering).map(([name, what]) => ({
    name: name as OrderingMutant,
    service: 'ordering' as const,
    what,
  })),
  ...Object.entries(payments).map(([name, what]) => ({
    name: name as PaymentsMutant,
    service: 'payments' as const,
    what,
  })),
];

export interface MutantResult {
  readonly mutant: Mutant;
  /** The first phase with a violation (the defect was seen); undefined: it survived. */
  readonly killedIn?: string;
  readonly firstViolation?: string;
  /** Every violation of the phase that killed it. */
  readonly violations: readonly string[];
  /** The run could not be made (the platform did not start, say): neither killed nor survived. */
  readonly error?: string;
  readonly phasesRun: number;
  readonly seconds: number;
}

export interface MutationCheck {
  /** The mutation profile without a defect (undefined when skipped). */
  readonly control?: SuiteResult;
  readonly results: readonly MutantResult[];
}

/**
 * The mutation check: for each mutant, a fresh platform with its flag set on its service runs
 * the mutation profile's phases in order and stops at the first phase with a violation (the
 * defect is killed); one that runs every phase clean survived: the suite cannot see it. First,
 * unless `control` is false, the same profile without a defect, which must pass: a suite that
 * fails without a defect proves nothing by failing with one.
 */
export async function runMutationCheck(options: {
  seed: number;
  /** Names of MUTANTS; default all. */
  mutants?: readonly string[];
  control: boolean;
  /** Only these phases of the mutation profile. */
  only?: readonly string[];
  log: (line: string) => void;
}): Promise<MutationCheck> {
  const chosen = options.mutants?.length
    ? options.mutants.map((name) => {
        const mutant = MUTANTS.find((candidate) => candidate.name === name);
        if (!mutant) {
          throw new Error(
            `no mutant named ${name}; known: ${MUTANTS.map((known) => known.name).join(', ')}`,
          );
        }
        return mutant;
      })
    : MUTANTS;
  const common = { profile: 'mutation', seed: options.seed, only: options.only } as const;
  let control: SuiteResult | undefined;
  if (options.control) {
    options.log('control: the mutation profile without a defect');
    control = await runFaultSuite({
      ...common,
      keepLogsOnViolation: true,
      log: (line) => options.log(`[control] ${line}`),
    });
    if (control.violated > 0) return { control, results: [] };
  }
  const results: MutantResult[] = [];
  for (const mutant of chosen) {
    const variable =
      mutant.service === 'ordering' ? 'ORDERING_TEST_MUTANT' : 'PAYMENTS_TEST_MUTANT';
    options.log(`mutant ${mutant.name}: ${variable}=${mutant.name} on ${mutant.service}`);
    const started = Date.now();
    const seconds = () => (Date.now() - started) / 1000;
    try {
      const result = await runFaultSuite({
        ...common,
        serviceEnv: { [mutant.service]: { [variable]: mutant.name } },
        stopAtFirstViolation: true,
        log: (line) => options.log(`[${mutant.name}] ${line}`),
      });
      const killer = result.phases.find((phase) => phase.violations.length > 0);
      results.push({
        mutant,
        phasesRun: result.phases.length,
        seconds: seconds(),
        violations: killer?.violations ?? [],
        ...(killer ? { killedIn: killer.fault, firstViolation: killer.violations[0] } : {}),
      });
    } catch (error) {
      results.push({
        mutant,
        phasesRun: 0,
        seconds: seconds(),
        violations: [],
        error: String(error),
      });
    }
    const last = results.at(-1)!;
    options.log(
      `mutant ${mutant.name}: ${last.killedIn ? `killed in "${last.killedIn}"` : last.error ? `could not run: ${last.error}` : 'SURVIVED'} (${last.seconds.toFixed(0)} s)`,
    );
  }
  return { control, results };
}

/** The control's table, then one line per mutant: killed or survived, by what, how long. */
export function formatMutationCheck(check: MutationCheck, seed: number): string {
  const out: string[] = [];
  if (check.control) {
    out.push(
      formatReport(check.control),
      check.control.violated > 0
        ? 'The control failed without a defect: the mutation check proves nothing until it passes.'
        : 'Control: no violation without a defect.',
      '',
    );
  }
  if (check.results.length === 0) return out.join('\n');
  const header = ['mutant', 'result', 'killed by (phase)', 'first violation', 'seconds'];
  const rows = check.results.map((result) => [
    result.mutant.name,
    result.killedIn ? 'killed' : result.error ? 'ERROR' : 'SURVIVED',
    result.killedIn ?? (result.error ? '' : `(${result.phasesRun} phases clean)`),
    clip(result.firstViolation ?? result.error ?? '', 110),
    result.seconds.toFixed(0),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) =>
        column === cells.length - 1 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join(' | ');
  const killed = check.results.filter((result) => result.killedIn).length;
  const seen = check.results.flatMap((result) =>
    result.violations.length > 0
      ? [
          `${result.mutant.name} (${result.mutant.what}), in "${result.killedIn}":`,
          ...result.violations.slice(0, 5).map((violation) => `  ${violation}`),
          ...(result.violations.length > 5 ? [`  … and ${result.violations.length - 5} more`] : []),
        ]
      : [],
  );
  out.push(
    `Mutation check (profile mutation), seed ${seed}: a mutant is killed by the first phase with a violation`,
    line(header),
    widths.map((width) => '-'.repeat(width)).join('-+-'),
    ...rows.map(line),
    '',
    ...seen,
    '',
    `Mutation score: ${killed}/${check.results.length} killed.`,
    `Replay: FAULT_SEED=${seed} npm run test:faults -- --mutants=${check.results.map((result) => result.mutant.name).join(',')}`,
  );
  return out.join('\n');
}

const clip = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;
