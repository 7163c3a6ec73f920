import { describe, expect, it } from 'vitest';
import { mergeResults } from '../src/history.js';
import { markdown, versus, type BenchRun, type UmbrellaResult } from '../src/summary.js';

const ORDER = ['stores', 'cart', 'memory'];

const run = (bench: string, rate: number, peakRss = 200): BenchRun => ({
  bench,
  replicas: 1,
  status: 'ok',
  exitCode: 0,
  signal: null,
  timedOut: false,
  seconds: 30,
  settings: {},
  log: `logs/${bench}-x1.log`,
  records: [
    {
      kind: 'table',
      title: `${bench} table`,
      rows: [{ run: 'unthrottled', 'target req/s': 'max', 'achieved req/s': rate, 'p99 ms': 20 }],
    },
    { kind: 'memory', title: 'Peak RSS', rows: [{ process: 'gateway', 'peak RSS MB': peakRss }] },
  ],
});

const result = (commit: string, started: string, runs: BenchRun[]): UmbrellaResult => ({
  command: 'npm run bench',
  full: false,
  started,
  finished: started,
  seconds: 60,
  machine: { cpus: 2, memoryGB: 8, os: 'Linux', node: 'v24', commit, uncommittedChanges: false },
  loadAverage: { before: [0], after: [0] },
  interrupted: false,
  runs,
});

const OLD = result('aaaaaaaaaaaaaaaa', '2026-11-01T10:00:00.000Z', [
  run('stores', 3000),
  run('cart', 1000),
]);

describe('merging a run into the results', () => {
  it('keeps the benches not run, marked with the run they came from', () => {
    const merged = mergeResults(
      OLD,
      result('bbbbbbbbbbbbbbbb', '2026-12-01T10:00:00.000Z', [run('cart', 900)]),
      ORDER,
    );
    expect(merged.runs.map((r) => [r.bench, r.measured?.commit])).toEqual([
      ['stores', 'aaaaaaaaaaaaaaaa'],
      ['cart', undefined],
    ]);
    expect(merged.runs[0]!.measured?.started).toBe('2026-11-01T10:00:00.000Z');
    expect(merged.runs[0]!.records).toEqual(OLD.runs[0]!.records);
    // The bench that ran: its own figures, and the previous run's beside them.
    expect(merged.runs[1]!.previous).toMatchObject({
      commit: 'aaaaaaaaaaaaaaaa',
      status: 'ok',
      rows: [{ table: 'cart table', label: 'unthrottled', throughput: 1000, p99: 20 }],
      peakRss: { gateway: 200 },
    });
  });

  it('keeps a carried run its first mark through later merges', () => {
    const second = mergeResults(
      OLD,
      result('bbbbbbbbbbbbbbbb', '2026-12-01T10:00:00.000Z', [run('cart', 900)]),
      ORDER,
    );
    const third = mergeResults(
      second,
      result('cccccccccccccccc', '2026-12-02T10:00:00.000Z', [run('cart', 950), run('memory', 0)]),
      ORDER,
    );
    expect(third.runs.map((r) => [r.bench, r.measured?.commit])).toEqual([
      ['stores', 'aaaaaaaaaaaaaaaa'],
      ['cart', undefined],
      ['memory', undefined],
    ]);
    expect(third.runs[1]!.previous?.commit).toBe('bbbbbbbbbbbbbbbb');
    expect(third.runs[2]!.previous).toBeUndefined();
  });

  it('with no earlier results, is the run itself', () => {
    const current = result('bbbbbbbbbbbbbbbb', '2026-12-01T10:00:00.000Z', [run('cart', 900)]);
    expect(mergeResults(undefined, current, ORDER)).toBe(current);
  });
});

describe('the previous figures in the report', () => {
  it('writes a figure with the previous one and the change', () => {
    expect(versus(900, 1000)).toBe('900 (prev 1000, −10 %)');
    expect(versus(1100, 1000)).toBe('1100 (prev 1000, +10 %)');
    expect(versus(1000, 1000)).toBe('1000 (prev 1000, ±0 %)');
    expect(versus(1000, undefined)).toBe('1000');
    expect(versus(undefined, 1000)).toBe('');
  });

  it('renders the previous run beside the new figures and names it, and marks kept runs', () => {
    const md = markdown(
      mergeResults(
        OLD,
        result('bbbbbbbbbbbbbbbb', '2026-12-01T10:00:00.000Z', [run('cart', 900, 250)]),
        ORDER,
      ),
    );
    // The summary: the best peak and the largest peak RSS, each with the previous run's.
    expect(md).toMatch(
      /\| cart \| 1 \| ok \| 30 \| unthrottled \| 900 \(prev 1000, −10 %\) \|.*\| gateway 250 \(prev 200, \+25 %\) MB \| this run \|/,
    );
    expect(md).toMatch(
      /\| stores \| 1 \| ok \|.*\| 3000 \|.*\| commit aaaaaaaaaaaa of 2026-11-01 \|/,
    );
    expect(md).toContain(
      "Beside each figure, the previous run's (commit aaaaaaaaaaaa of 2026-11-01)",
    );
    expect(md).toContain('Not run this time: the figures of commit aaaaaaaaaaaa of 2026-11-01.');
    expect(md).toContain('| unthrottled | max | 900 (prev 1000, −10 %) req/s |');
    expect(md).toContain('Peak RSS (VmHWM, MB): gateway 250 (prev 200, +25 %)');
  });

  it('marks a process above its limit as failing', () => {
    const memory: BenchRun = {
      ...run('memory', 0),
      status: 'failed',
      records: [
        {
          kind: 'limits',
          title: 'Peak RSS against the limits',
          rows: [
            { process: 'gateway', 'peak RSS MiB': 462, '% of base limit': 120, verdict: 'FAIL' },
            { process: 'payments', 'peak RSS MiB': 170, '% of base limit': 66, verdict: 'ok' },
          ],
        },
      ],
    };
    const md = markdown(result('bbbbbbbbbbbbbbbb', '2026-12-01T10:00:00.000Z', [memory]));
    expect(md).toContain('| gateway | 462 | 120 | **FAIL** |');
    expect(md).toContain('| payments | 170 | 66 | ok |');
  });
});
