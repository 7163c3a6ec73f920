// latest.json across runs: a run of some benches merges into the results already there (the
// benches not run keep their figures, marked with the run they came from), and every bench
// that ran keeps its previous run's figures beside the new ones, so the report shows a
// regression by itself.
import {
  memoryOf,
  tablesOf,
  type BenchRun,
  type Measured,
  type PreviousFigures,
  type UmbrellaResult,
} from './summary.js';

const sameRun = (one: BenchRun, other: BenchRun) =>
  one.bench === other.bench && one.replicas === other.replicas;

/** Where an earlier result's run was measured: its own mark if carried, else that result's. */
const measuredOf = (result: UmbrellaResult, run: BenchRun): Measured =>
  run.measured ?? {
    started: result.started,
    ...(result.machine.commit ? { commit: result.machine.commit } : {}),
  };

/** A run's comparable figures (its tables' rows and peak RSS per process), compactly. */
export function figuresOf(run: BenchRun, measured: Measured): PreviousFigures {
  return {
    ...measured,
    status: run.status,
    rows: tablesOf(run).flatMap(({ title, rows }) =>
      rows.map((row) => ({
        table: title,
        label: row.label,
        ...(row.throughput === undefined ? {} : { throughput: row.throughput, unit: row.unit }),
        ...(row.p50 === undefined ? {} : { p50: row.p50 }),
        ...(row.p99 === undefined ? {} : { p99: row.p99 }),
      })),
    ),
    peakRss: Object.fromEntries(
      memoryOf(run).flatMap((row) =>
        typeof row['peak RSS MB'] === 'number' ? [[String(row.process), row['peak RSS MB']]] : [],
      ),
    ),
  };
}

/**
 * `current` with `earlier` merged in: each run of `current` gets the figures of the same bench
 * and replica count in `earlier` as `previous`; the runs of `earlier` that `current` did not
 * make are kept, marked `measured` with the run they came from; the runs are in `order` (by
 * replica count, then bench).
 */
export function mergeResults(
  earlier: UmbrellaResult | undefined,
  current: UmbrellaResult,
  order: readonly string[],
): UmbrellaResult {
  if (!earlier) return current;
  const withPrevious = <T extends BenchRun>(run: T): T => {
    const before = earlier.runs.find((candidate) => sameRun(candidate, run));
    return before ? { ...run, previous: figuresOf(before, measuredOf(earlier, before)) } : run;
  };
  const carried = earlier.runs
    .filter((run) => !current.runs.some((candidate) => sameRun(candidate, run)))
    .map((run) => ({ ...run, measured: measuredOf(earlier, run) }));
  const rank = (run: BenchRun) => {
    const index = order.indexOf(run.bench);
    return run.replicas * (order.length + 1) + (index === -1 ? order.length : index);
  };
  const baselines =
    current.baselines && earlier.baselines
      ? {
          ...current.baselines,
          previous: figuresOf(earlier.baselines, measuredOf(earlier, earlier.baselines)),
        }
      : current.baselines;
  return {
    ...current,
    ...(baselines ? { baselines } : {}),
    runs: [...current.runs.map(withPrevious), ...carried].sort((a, b) => rank(a) - rank(b)),
  };
}
