// latest.md from the umbrella run's records: per bench p50, p99, throughput, errors, CPU and
// peak RSS per process, each peak as a ratio to the floor's, bare Fastify's and the NestJS
// peer's, and the replicas compared, with a sentence from the figures on where throughput
// scales and where the cores are the limit.
import os from 'node:os';
import { median, round2 } from './helpers.js';
import type { BenchRecord, Row } from './report.js';

/** Ratio thresholds for the replicas' verdicts: above SCALES it scales, below SLOWER it lost. */
const SCALES = 1.25;
const SLOWER = 0.85;
/** Machine busy % (of all cores) from which the cores count as the limit. */
const CORES_BUSY = 85;

export interface BenchRun {
  bench: string;
  replicas: number;
  status: 'ok' | 'failed';
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  seconds: number;
  settings: Record<string, string | undefined>;
  log: string;
  errorTail?: string;
  records: BenchRecord[];
  /** Set on a run kept from an earlier result (not run this time): where it was measured. */
  measured?: Measured;
  /** The previous run of this bench and replica count, to compare (history.ts). */
  previous?: PreviousFigures;
}

/** The run a figure comes from: its commit and start. */
export interface Measured {
  commit?: string;
  started: string;
}

/** A run's figures, kept beside the next run's. */
export interface PreviousFigures extends Measured {
  status: BenchRun['status'];
  rows: {
    table: string;
    label: string;
    throughput?: number;
    unit?: string;
    p50?: number;
    p99?: number;
  }[];
  /** Peak RSS (MB as the memory table gives it) per process. */
  peakRss: Record<string, number>;
}

export interface Peaks {
  bare?: number;
  floor?: number;
  /** The NestJS peer's (absent from runs before it was measured). */
  nest?: number;
}

/** The issue's goal: the platform's store GET peak at least this many times the peer's. */
const PEER_GOAL = 1.5;

export interface UmbrellaResult {
  command: string;
  full: boolean;
  started: string;
  finished: string;
  seconds: number;
  machine: {
    cpus: number;
    cpuModel?: string;
    memoryGB: number;
    os: string;
    node: string;
    commit?: string;
    uncommittedChanges: boolean;
  };
  loadAverage: { before: number[]; after: number[] };
  interrupted: boolean;
  baselines?: BenchRun & { peaks?: Peaks };
  runs: BenchRun[];
}

interface NormalizedRow {
  label: string;
  target: number | 'max' | undefined;
  throughput: number | undefined;
  unit: string | undefined;
  p50: number | undefined;
  p99: number | undefined;
  errors: number | string | undefined;
  cpu: unknown;
  loadCpu: number | undefined;
  busy: number | undefined;
  peak: boolean;
  baseline: boolean;
}

const num = (value: unknown) =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

/** One row of any bench's table as the columns the summary compares, or undefined. */
function normalizeRow(row: Row): NormalizedRow | undefined {
  const target = row['target req/s'];
  const text = (value: unknown) => String(value);
  let label = text(
    row.run ??
      (row.phase !== undefined
        ? `${text(row.phase)}: ${text(row.endpoint)}`
        : row.size !== undefined
          ? `${text(row.size)} items`
          : ''),
  ).trim();
  if (!label) label = target === 'max' ? 'unthrottled' : `at ${String(target)}/s`;
  let throughput: number | undefined;
  let unit: string | undefined;
  for (const [key, name] of [
    ['achieved req/s', 'req/s'],
    ['req/s', 'req/s'],
    ['deliveries/s', 'deliveries/s'],
    ['items/s (median)', 'items/s'],
  ] as const) {
    const value = num(row[key]);
    if (value !== undefined) {
      throughput = value;
      unit = name;
      break;
    }
  }
  // The ingest bench's time from notification to success (the median of its runs).
  const p50 = num(row['p50 ms']) ?? (num(row['median s']) ?? NaN) * 1000;
  const p99 = num(row['p99 ms']);
  if (throughput === undefined && Number.isNaN(p50) && p99 === undefined) return undefined;
  const counts = ['non-2xx', 'errors'].flatMap((key) => num(row[key]) ?? []);
  let errors: number | string | undefined =
    counts.length > 0 ? counts.reduce((a, b) => a + b, 0) : undefined;
  if (errors === undefined && typeof row.outcomes === 'string') errors = row.outcomes;
  const delivered = typeof row.delivered === 'string' && /^(\d+) of (\d+)$/.exec(row.delivered);
  if (errors === undefined && delivered) {
    errors = `${Number(delivered[2]) - Number(delivered[1])} missing`;
  }
  const busyKey = Object.keys(row).find((key) => key.startsWith('machine busy'));
  return {
    label,
    target: target === 'max' ? 'max' : num(target),
    throughput,
    unit,
    p50: Number.isNaN(p50) ? undefined : round2(p50),
    p99,
    errors,
    cpu: row['server CPU % (1 core = 100)'] || row['CPU % (1 core = 100)'] || undefined,
    loadCpu: num(row['bench CPU %']),
    busy: busyKey === undefined ? undefined : num(row[busyKey]),
    // Unthrottled or closed loop: the most it did, not the rate it was offered.
    peak: target === 'max' || /unthrottled|peak|shed/i.test(label),
    // The baselines a bench measures beside the platform (the cart's, the orders' floor).
    baseline: /fastify|floor|nestjs/i.test(label),
  };
}

/** A run's tables with their normalized rows (only those with figures to compare). */
export function tablesOf(run: BenchRun) {
  return run.records
    .flatMap((record) => (record.kind === 'table' ? [record] : []))
    .map((record) => ({
      title: record.title,
      rows: record.rows.flatMap((row) => normalizeRow(row) ?? []),
    }))
    .filter((table) => table.rows.length > 0);
}

export const memoryOf = (run: BenchRun): Row[] =>
  run.records.flatMap((record) => (record.kind === 'memory' ? [record.rows] : []))[0] ?? [];
const limitsOf = (run: BenchRun) =>
  run.records.flatMap((record) => (record.kind === 'limits' ? [record] : []));
const verdictsOf = (run: BenchRun) =>
  run.records.flatMap((record) => (record.kind === 'verdicts' ? record.lines : []));

/** The busiest process in a CPU column ("gateway 95, ordering 80"), or undefined. */
function busiest(cpu: unknown) {
  if (typeof cpu !== 'string') return undefined;
  return cpu
    .split(',')
    .flatMap((part) => {
      const match = /^\s*(.+?)\s+(\d+)$/.exec(part);
      return match ? [{ name: match[1]!, pct: Number(match[2]) }] : [];
    })
    .sort((a, b) => b.pct - a.pct)[0];
}

/** Rows worth comparing across replica counts: peaks and capacity figures. */
const comparable = (row: NormalizedRow) =>
  row.throughput !== undefined &&
  !row.baseline &&
  (row.peak || row.unit === 'items/s' || row.unit === 'deliveries/s');

const cell = (value: unknown) => {
  if (value === undefined || value === null || value === '') return '';
  const text =
    typeof value === 'string'
      ? value
      : typeof value === 'number' || typeof value === 'boolean'
        ? String(value)
        : JSON.stringify(value);
  return text.replace(/\|/g, '\\|');
};
const table = (headers: string[], rows: unknown[][]) =>
  [
    `| ${headers.join(' | ')} |`,
    `| ${headers.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
const ratio = (value: number | undefined, of: number | undefined) =>
  value && of ? round2(value / of) : undefined;
const replicasName = (n: number) => `${n} replica${n === 1 ? '' : 's'}`;

/** "commit 62f768d775ba of 2026-11-27". */
export const whence = (measured: Measured) =>
  `${measured.commit ? `commit ${measured.commit.slice(0, 12)}` : 'an unknown commit'} of ${measured.started.slice(0, 10)}`;

/**
 * A figure with the previous run's beside it: "1234 (prev 1300, -5.1 %)"; the figure alone
 * when there is no previous one to compare.
 */
export function versus(now: number | undefined, before: number | undefined): string {
  if (now === undefined) return '';
  if (before === undefined) return String(now);
  const change = before === 0 ? undefined : round2((100 * (now - before)) / before);
  const delta =
    change === undefined
      ? ''
      : `, ${change > 0 ? '+' : change < 0 ? '−' : '±'}${Math.abs(change)} %`;
  return `${now} (prev ${before}${delta})`;
}

const previousRow = (run: BenchRun, table: string, label: string) =>
  run.previous?.rows.find((row) => row.table === table && row.label === label);

function runSection(run: BenchRun, peaks: Peaks | undefined): string {
  const lines = [
    `### ${run.bench}, ${replicasName(run.replicas)}: ${run.status === 'ok' ? 'ok' : '**FAILED**'}`,
    '',
    `${run.seconds} s; settings ${Object.entries(run.settings)
      .map(([key, value]) => `\`${key}=${value}\``)
      .join(' ')}; full output in \`${run.log}\` (not committed)`,
    '',
  ];
  if (run.measured) {
    lines.push(`Not run this time: the figures of ${whence(run.measured)}.`, '');
  }
  if (run.previous) {
    lines.push(
      `Beside each figure, the previous run's (${whence(run.previous)}` +
        `${run.previous.status === 'ok' ? '' : ', which failed'}): "prev", and the change.`,
      '',
    );
  }
  if (run.status !== 'ok') {
    const why = run.timedOut
      ? 'ran over its time limit'
      : `exit code ${run.exitCode}${run.signal ? `, signal ${run.signal}` : ''}`;
    lines.push(
      `Failed (${why}); the end of its output:`,
      '',
      '```text',
      run.errorTail ?? '',
      '```',
      '',
    );
  }
  for (const { title, rows } of tablesOf(run)) {
    lines.push(
      `*${title}*`,
      '',
      table(
        [
          'run',
          'target/s',
          'throughput',
          'p50 ms',
          'p99 ms',
          'errors',
          'CPU % (1 core = 100)',
          'bench CPU %',
          'machine busy %',
          '× floor peak',
          '× bare Fastify peak',
          '× NestJS peer peak',
        ],
        rows.map((row) => {
          const againstPeaks = row.peak && row.unit === 'req/s';
          const before = previousRow(run, title, row.label);
          return [
            row.label,
            row.target,
            row.throughput === undefined
              ? ''
              : `${versus(row.throughput, before?.throughput)} ${row.unit}`,
            versus(row.p50, before?.p50),
            versus(row.p99, before?.p99),
            row.errors,
            row.cpu,
            row.loadCpu,
            row.busy,
            againstPeaks ? ratio(row.throughput, peaks?.floor) : '',
            againstPeaks ? ratio(row.throughput, peaks?.bare) : '',
            againstPeaks ? ratio(row.throughput, peaks?.nest) : '',
          ];
        }),
      ),
      '',
    );
  }
  const memory = memoryOf(run);
  if (memory.length > 0) {
    const peak = (row: Row) => num(row['peak RSS MB']);
    lines.push(
      `Peak RSS (VmHWM, MB): ${memory
        .map(
          (row) =>
            `${String(row.process)} ${versus(peak(row), run.previous?.peakRss[String(row.process)])}`,
        )
        .join(' · ')}`,
      '',
    );
  }
  for (const { title, rows } of limitsOf(run)) {
    const headers = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    lines.push(
      `*${title}*`,
      '',
      table(
        headers,
        rows.map((row) =>
          headers.map((key) => (key === 'verdict' && row[key] === 'FAIL' ? '**FAIL**' : row[key])),
        ),
      ),
      '',
    );
  }
  const verdicts = verdictsOf(run);
  if (verdicts.length > 0) lines.push(...verdicts.map((line) => `- ${line.trim()}`), '');
  return lines.join('\n');
}

/** The best platform peak of a run (req/s), with its row. */
function bestPeak(run: BenchRun) {
  return tablesOf(run)
    .flatMap((t) => t.rows)
    .filter((row) => row.peak && !row.baseline && row.unit === 'req/s')
    .sort((a, b) => (b.throughput ?? 0) - (a.throughput ?? 0))[0];
}

interface Pair {
  label: string;
  one: NormalizedRow;
  other: NormalizedRow;
  ratio: number | undefined;
}

/** Rows of two runs of one bench matched by table and label, with their ratio. */
function pairs(one: BenchRun, other: BenchRun): Pair[] {
  const index = (run: BenchRun) => {
    const rows = new Map<string, NormalizedRow>();
    for (const { title, rows: tableRows } of tablesOf(run)) {
      for (const row of tableRows.filter(comparable)) rows.set(`${title}\u0000${row.label}`, row);
    }
    return rows;
  };
  const second = index(other);
  return [...index(one)].flatMap(([key, row]) => {
    const match = second.get(key);
    return match
      ? [
          {
            label: row.label,
            one: row,
            other: match,
            ratio: ratio(match.throughput, row.throughput),
          },
        ]
      : [];
  });
}

type Kind = 'scales' | 'flat' | 'slower' | 'failed' | 'unknown';

/** One sentence on a bench's scaling, from its matched rows. */
function scalingSentence(
  bench: string,
  matched: Pair[],
  replicas: number,
): { bench: string; kind: Kind; text: string } {
  const [example] = matched;
  if (!example) return { bench, kind: 'unknown', text: `${bench}: no figure to compare.` };
  const r = round2(median(matched.map((pair) => pair.ratio ?? NaN)));
  const busyOne = Math.max(...matched.map((pair) => pair.one.busy ?? -1));
  const busyOther = Math.max(...matched.map((pair) => pair.other.busy ?? -1));
  const top = matched
    .flatMap((pair) => busiest(pair.one.cpu) ?? [])
    .sort((a, b) => b.pct - a.pct)[0];
  const load = Math.max(...matched.map((pair) => pair.one.loadCpu ?? -1));
  const figures =
    `median ×${r} over ${matched.length} figure(s), e.g. ${example.label}: ` +
    `${example.one.throughput} → ${example.other.throughput} ${example.one.unit}`;
  const machineText =
    busyOne >= 0 && busyOther >= 0
      ? `machine busy ${busyOne} % → ${busyOther} %`
      : 'machine busy not measured by this bench';
  if (r >= SCALES) {
    return {
      bench,
      kind: 'scales',
      text:
        `${bench}: scales with ${replicas} replicas (${figures}; ${machineText})` +
        (busyOther >= CORES_BUSY ? ', and there the cores are full.' : '.'),
    };
  }
  if (r < SLOWER) {
    return {
      bench,
      kind: 'slower',
      text: `${bench}: slower with ${replicas} replicas (${figures}): the extra processes compete for the ${os.availableParallelism()} cores (${machineText}).`,
    };
  }
  let why;
  if (busyOne >= CORES_BUSY) {
    why = `the cores were already ${busyOne} % busy with one replica: the cores are the limit`;
  } else if (load >= 90) {
    why = `the load generator used ${load} % of a core: it, not the platform, is the limit`;
  } else if (top && top.pct >= 90) {
    why = `${top.name} used ${top.pct} % of a core with one replica, yet a second did not help: the cores (or a shared server) are the limit`;
  } else if (busyOne < 0) {
    why = 'this bench does not measure CPU; its rate is set by what it offers or waits for';
  } else {
    why = `with one replica the machine was ${busyOne} % busy and no process saturated a core: the limit is latency or a shared server, not CPU`;
  }
  return { bench, kind: 'flat', text: `${bench}: does not scale (${figures}); ${why}.` };
}

/** The stores bench's store GET peak against the NestJS peer's, per replica count. */
function peerVerdicts(runs: BenchRun[], peaks: Peaks | undefined): string[] {
  if (!peaks?.nest) return [];
  return runs.flatMap((run) => {
    const best = run.bench === 'stores' && run.status === 'ok' ? bestPeak(run) : undefined;
    const times = ratio(best?.throughput, peaks.nest);
    if (times === undefined) return [];
    const verdict = times >= PEER_GOAL ? 'meets' : '**misses**';
    return [
      `The stores bench's GET store, ${replicasName(run.replicas)}, peaks at ${best?.throughput} ` +
        `req/s: **×${times}** the NestJS peer's, which ${verdict} the goal of ×${PEER_GOAL}.`,
      '',
    ];
  });
}

/** What of the report is this run's, what is kept from earlier ones, and what "prev" means. */
function history(result: UmbrellaResult): string[] {
  const carried = result.runs.filter((run) => run.measured);
  const compared = result.runs.filter((run) => run.previous);
  if (carried.length === 0 && compared.length === 0) return [];
  const name = (run: BenchRun) => `${run.bench} ×${run.replicas}`;
  const ran = result.runs.filter((run) => !run.measured);
  return [
    ...(carried.length > 0
      ? [
          `This run measured ${ran.map(name).join(', ') || 'no bench'}; the others keep the ` +
            `figures of an earlier run, each marked with its commit and date: ` +
            `${carried.map((run) => `${name(run)} (${whence(run.measured!)})`).join(', ')}.`,
          '',
        ]
      : []),
    ...(compared.length > 0
      ? [
          'A figure of a bench this run measured is followed by the same figure of its previous ' +
            'run, "(prev X, ±Δ %)", so a change shows here; each section names that run.',
          '',
        ]
      : []),
  ];
}

function header(result: UmbrellaResult, peaks: Peaks | undefined): string[] {
  const { machine: m } = result;
  const peer = peaks?.nest
    ? `, and the NestJS peer (the store GET as a NestJS app over the same NATS hop to ` +
      `Postgres) at **${peaks.nest} req/s**`
    : '';
  return [
    '# Benchmarks: latest run',
    '',
    `${result.started} to ${result.finished} (${Math.round(result.seconds / 60)} min), ` +
      `\`${result.command}\`${result.full ? '' : ' (umbrella-sized settings)'}.`,
    '',
    `Machine: ${m.cpus} cores (${m.cpuModel}), ${m.memoryGB} GB, ${m.os}, Node ${m.node}; ` +
      `commit ${m.commit?.slice(0, 12)}${m.uncommittedChanges ? ' with uncommitted changes' : ''}; ` +
      `load average before ${result.loadAverage.before.join(' / ')}, after ` +
      `${result.loadAverage.after.join(' / ')}.`,
    '',
    ...history(result),
    '## The baselines',
    '',
    peaks
      ? `What this machine does at all, in this run: bare Fastify peaks at **${peaks.bare} req/s**, ` +
        `the floor (Fastify → NATS → fixed reply) at **${peaks.floor} req/s**${peer}. Each ` +
        'platform peak below is also given as a ratio of these.'
      : 'The baselines did not complete: no ratios below.',
    '',
    ...peerVerdicts(result.runs, peaks),
  ];
}

function summaryTable(runs: BenchRun[], peaks: Peaks | undefined): string {
  return table(
    [
      'bench',
      'replicas',
      'status',
      'seconds',
      'best platform peak',
      'req/s',
      '× floor',
      '× bare Fastify',
      '× NestJS peer',
      'largest peak RSS',
      'figures of',
    ],
    runs.map((run) => {
      const best = bestPeak(run);
      const before = best && run.previous?.rows.find((row) => row.label === best.label);
      const memory = memoryOf(run)
        .filter((row) => !/^nats-server|^bench /.test(String(row.process)))
        .sort((a, b) => Number(b['peak RSS MB']) - Number(a['peak RSS MB']))[0];
      return [
        run.bench,
        run.replicas,
        run.status === 'ok' ? 'ok' : '**failed**',
        run.seconds,
        best?.label,
        versus(best?.throughput, before?.throughput),
        ratio(best?.throughput, peaks?.floor),
        ratio(best?.throughput, peaks?.bare),
        ratio(best?.throughput, peaks?.nest),
        memory
          ? `${String(memory.process)} ${versus(num(memory['peak RSS MB']), run.previous?.peakRss[String(memory.process)])} MB`
          : '',
        run.measured ? whence(run.measured) : 'this run',
      ];
    }),
  );
}

/** The replicas section: each bench with one process per service against `replicas`. */
function replicasSection(runs: BenchRun[], replicas: number): string[] {
  const rows: unknown[][] = [];
  const sentences: { bench: string; kind: Kind; text: string }[] = [];
  for (const bench of new Set(runs.map((run) => run.bench))) {
    const one = runs.find((run) => run.bench === bench && run.replicas === 1);
    const other = runs.find((run) => run.bench === bench && run.replicas === replicas);
    if (!one || !other) continue;
    if (one.status !== 'ok' || other.status !== 'ok') {
      sentences.push({ bench, kind: 'failed', text: `${bench}: a run failed; not compared.` });
      continue;
    }
    const matched = pairs(one, other);
    for (const pair of matched) {
      rows.push([
        bench,
        pair.label,
        `${pair.one.throughput} ${pair.one.unit}`,
        `${pair.other.throughput} ${pair.other.unit}`,
        `×${pair.ratio}`,
        pair.one.p99,
        pair.other.p99,
        pair.one.busy,
        pair.other.busy,
        pair.one.cpu,
        pair.other.cpu,
      ]);
    }
    sentences.push(scalingSentence(bench, matched, replicas));
  }
  const names = (kind: Kind) =>
    sentences
      .filter((s) => s.kind === kind)
      .map((s) => s.bench)
      .join(', ') || 'none';
  return [
    `### 1 against ${replicas} replicas`,
    '',
    table(
      [
        'bench',
        'run',
        'throughput ×1',
        `throughput ×${replicas}`,
        'ratio',
        'p99 ms ×1',
        `p99 ms ×${replicas}`,
        'machine busy % ×1',
        `machine busy % ×${replicas}`,
        'CPU % ×1',
        `CPU % ×${replicas}`,
      ],
      rows,
    ),
    '',
    `Throughput scales (×${SCALES} or more) in: ${names('scales')}. It stays flat in: ` +
      `${names('flat')}; it drops in: ${names('slower')}.`,
    '',
    ...sentences.map((s) => `- ${s.text}`),
    '',
  ];
}

/** latest.md. */
export function markdown(result: UmbrellaResult): string {
  const peaks = result.baselines?.peaks;
  const runs = result.runs;
  const lines = header(result, peaks);
  if (result.baselines) lines.push(runSection(result.baselines, peaks));
  lines.push('## Summary', '', summaryTable(runs, peaks), '');
  const counts = [...new Set(runs.map((run) => run.replicas))].sort((a, b) => a - b);
  if (counts.length > 1 && counts[0] === 1) {
    lines.push(
      '## Replicas',
      '',
      'The peaks (unthrottled or closed loop) and capacity figures of each bench with one ' +
        'process per service against more; the fixed-rate runs offer the same load either way ' +
        '(see their p99 in the sections below).',
      '',
    );
    for (const replicas of counts.slice(1)) lines.push(...replicasSection(runs, replicas));
  }
  lines.push('## Each bench', '');
  for (const run of runs) lines.push(runSection(run, peaks));
  return `${lines.join('\n')}\n`;
}
