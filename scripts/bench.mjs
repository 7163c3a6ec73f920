// `npm run bench`: every benchmark in one run, and the baselines they are measured against, so
// each figure is also a ratio to what this machine can do at all. The baselines (a bare Fastify
// route, and the Fastify → NATS → fixed-reply floor: bench-baselines.mjs) run once; then each
// bench runs in turn as a child process, first with one process per service, then again with
// BENCH_REPLICAS=2 (two of each service; two gateways sharing the port through node:cluster).
// Every bench appends its tables as JSON lines to BENCH_RESULTS_FILE (lib/bench-platform.mjs),
// including each process's peak RSS; this script writes them all to bench/results/latest.json
// and a summary to bench/results/latest.md: per bench p50, p99, throughput, errors, CPU and
// peak RSS per process, each peak as a ratio to the floor's and bare Fastify's, and the
// replicas compared, with a sentence from the figures on where throughput scales and where
// the two cores are the limit. A bench that fails is recorded as failed, with the tail of its
// output, and the run goes on. Each bench's full output is in bench/results/logs/.
//
// The benches run with shorter settings than alone (UMBRELLA below: about 10 min per replica
// count on 2 cores); --full runs each with its own defaults. Any BENCH_* variable set in the
// environment wins over both (e.g. BENCH_SECONDS=10 for all).
//   --only stores,cart      some of the benches (the baselines always run)
//   --replicas 1,2          the replica counts to run every bench with (default 1,2)
//   --full                  each bench's own (full) sizes
//   --out <dir>             where latest.json, latest.md and logs/ go (bench/results)
//   --timeout-minutes <n>   end a bench that runs longer (default 20, 60 with --full)
//   --render                only write latest.md anew from latest.json (no bench runs)
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { build, ensureDependencies, fail, log, root } from './lib/setup.mjs';

const BENCHES = ['ingest', 'stores', 'discovery', 'cart', 'payments', 'orders', 'webhooks'];
/** Umbrella-sized settings per bench (under any BENCH_* set in the environment). */
const UMBRELLA = {
  baselines: { BENCH_SECONDS: '5' },
  ingest: { BENCH_RUNS: '1', BENCH_POLL_SIZE: '10000', BENCH_SECONDS: '5' },
  stores: { BENCH_SECONDS: '5' },
  discovery: { BENCH_SECONDS: '5' },
  cart: { BENCH_SECONDS: '5' },
  payments: { BENCH_SECONDS: '5' },
  orders: { BENCH_SECONDS: '5' },
  webhooks: { BENCH_ORDERS: '500' },
};
/** Ratio thresholds for the replicas' verdicts: above SCALES it scales, below SLOWER it lost. */
const SCALES = 1.25;
const SLOWER = 0.85;
/** Machine busy % (of all cores) from which the cores count as the limit. */
const CORES_BUSY = 85;
const TAIL_BYTES = 6_000;

let options;
try {
  ({ values: options } = parseArgs({
    options: {
      only: { type: 'string' },
      replicas: { type: 'string', default: '1,2' },
      full: { type: 'boolean', default: false },
      out: { type: 'string', default: join(root, 'bench', 'results') },
      'timeout-minutes': { type: 'string' },
      render: { type: 'boolean', default: false },
    },
  }));
} catch (error) {
  fail(error);
}
const only = options.only?.split(',').map((name) => name.trim()) ?? BENCHES;
const unknown = only.filter((name) => !BENCHES.includes(name));
if (unknown.length > 0 || only.length === 0) {
  fail(new Error(`--only lists some of ${BENCHES.join(', ')}; unknown: ${unknown.join(', ')}`));
}
const benches = BENCHES.filter((name) => only.includes(name));
const replicaCounts = options.replicas.split(',').map(Number);
if (replicaCounts.some((n) => !Number.isInteger(n) || n < 1 || n > 8)) {
  fail(new Error('--replicas lists integers from 1 to 8, e.g. 1,2'));
}
const timeoutMinutes = Number(options['timeout-minutes'] ?? (options.full ? 60 : 20));
if (!(timeoutMinutes > 0)) fail(new Error('--timeout-minutes must be positive'));
const outDir = options.out;
const logsDir = join(outDir, 'logs');

const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const git = (...args) => spawnSync('git', args, { cwd: root, encoding: 'utf8' }).stdout?.trim();

// ---------------------------------------------------------------------------------------
// Running.

let interrupted = false;
process.on('SIGINT', () => {
  // Not forwarded: the terminal's SIGINT reaches the bench child too (the same process group),
  // and a second one would end it before its clean-up. A SIGINT to this process alone lets
  // the current bench finish.
  interrupted = true;
  process.stderr.write('\n[bench] interrupted: writing what was measured once this bench ends\n');
});

/** Run one bench as a child; its records, status and the tail of its output. */
async function runBench(name, replicas, resultsDir) {
  const label = `${name}-x${replicas}`;
  const resultsFile = join(resultsDir, `${label}.jsonl`);
  const logFile = join(logsDir, `${label}.log`);
  const env = {
    ...(options.full ? {} : UMBRELLA[name]),
    ...process.env,
    BENCH_RESULTS_FILE: resultsFile,
    BENCH_NAME: name,
    BENCH_REPLICAS: String(replicas),
    BENCH_SKIP_BUILD: '1',
  };
  const settings = Object.fromEntries(
    Object.entries(env).filter(
      ([key]) =>
        key.startsWith('BENCH_') &&
        !['BENCH_RESULTS_FILE', 'BENCH_NAME', 'BENCH_SKIP_BUILD'].includes(key),
    ),
  );
  log(`── ${name}, ${replicas} replica(s): ${JSON.stringify(settings)}`);
  const started = Date.now();
  const logStream = createWriteStream(logFile);
  let tail = '';
  const child = spawn(process.execPath, [join(root, 'scripts', `bench-${name}.mjs`)], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tee = (target) => (chunk) => {
    target.write(chunk);
    logStream.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
  };
  child.stdout.on('data', tee(process.stdout));
  child.stderr.on('data', tee(process.stderr));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    process.stderr.write(`[bench] ${name} ran over ${timeoutMinutes} min: interrupting it\n`);
    child.kill('SIGINT');
    // Its clean-up gets a minute; after that it is killed (its services may then linger).
    setTimeout(() => child.kill('SIGKILL'), 60_000).unref();
  }, timeoutMinutes * 60_000);
  const { code, signal } = await new Promise((resolve) =>
    child.once('close', (exitCode, exitSignal) => resolve({ code: exitCode, signal: exitSignal })),
  );
  clearTimeout(timer);
  await new Promise((resolve) => logStream.end(resolve));
  const records = [];
  if (existsSync(resultsFile)) {
    for (const line of readFileSync(resultsFile, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        records.push(JSON.parse(line));
      } catch {
        // a line cut short by a crash
      }
    }
  }
  const ok = code === 0 && !timedOut;
  return {
    bench: name,
    replicas,
    status: ok ? 'ok' : 'failed',
    exitCode: code,
    signal,
    timedOut,
    seconds: Math.round((Date.now() - started) / 1000),
    settings,
    // Relative to latest.md, which links it.
    log: relative(outDir, logFile),
    ...(ok ? {} : { errorTail: tail.split('\n').slice(-40).join('\n') }),
    records,
  };
}

function machine() {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model,
    memoryGB: round(os.totalmem() / 1024 ** 3, 1),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    commit: git('rev-parse', 'HEAD'),
    uncommittedChanges: Boolean(git('status', '--porcelain')),
  };
}

// ---------------------------------------------------------------------------------------
// Reading the records.

const num = (value) => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/** One row of any bench's table as the columns the summary compares, or undefined. */
function normalizeRow(row) {
  const target = row['target req/s'];
  let label = String(
    row.run ??
      (row.phase !== undefined
        ? `${row.phase}: ${row.endpoint}`
        : row.size !== undefined
          ? `${row.size} items`
          : ''),
  ).trim();
  if (!label) label = target === 'max' ? 'unthrottled' : `at ${target}/s`;
  let throughput;
  let unit;
  for (const [key, name] of [
    ['achieved req/s', 'req/s'],
    ['req/s', 'req/s'],
    ['deliveries/s', 'deliveries/s'],
    ['items/s (median)', 'items/s'],
  ]) {
    if (num(row[key]) !== undefined) {
      throughput = row[key];
      unit = name;
      break;
    }
  }
  // bench-ingest's time from notification to success (the median of its runs).
  const p50 = num(row['p50 ms']) ?? (num(row['median s']) ?? NaN) * 1000;
  const p99 = num(row['p99 ms']);
  if (throughput === undefined && Number.isNaN(p50) && p99 === undefined) return undefined;
  const counts = ['non-2xx', 'errors'].map((key) => num(row[key])).filter((v) => v !== undefined);
  let errors = counts.length > 0 ? counts.reduce((a, b) => a + b, 0) : undefined;
  if (errors === undefined && typeof row.outcomes === 'string') errors = row.outcomes;
  const delivered = typeof row.delivered === 'string' && /^(\d+) of (\d+)$/.exec(row.delivered);
  if (errors === undefined && delivered) errors = `${delivered[2] - delivered[1]} missing`;
  const busyKey = Object.keys(row).find((key) => key.startsWith('machine busy'));
  return {
    label,
    target: target === 'max' ? 'max' : num(target),
    throughput,
    unit,
    p50: Number.isNaN(p50) ? undefined : round(p50),
    p99,
    errors,
    cpu: row['server CPU % (1 core = 100)'] || row['CPU % (1 core = 100)'] || undefined,
    loadCpu: num(row['bench CPU %']),
    busy: num(row[busyKey]),
    // Unthrottled or closed loop: the most it did, not the rate it was offered.
    peak: target === 'max' || /unthrottled|peak|shed/i.test(label),
    // The baselines a bench measures beside the platform (bench-cart's, bench-orders' floor).
    baseline: /fastify|floor/i.test(label),
  };
}

/** A run's tables with their normalized rows (only those with figures to compare). */
function tablesOf(run) {
  return run.records
    .filter((record) => record.kind === 'table')
    .map((record) => ({
      title: record.title,
      rows: record.rows.map(normalizeRow).filter(Boolean),
    }))
    .filter((table) => table.rows.length > 0);
}

const memoryOf = (run) => run.records.find((record) => record.kind === 'memory')?.rows ?? [];
const verdictsOf = (run) =>
  run.records.filter((record) => record.kind === 'verdicts').flatMap((record) => record.lines);

/** The busiest process in a CPU column ("gateway 95, ordering 80"), or undefined. */
function busiest(cpu) {
  if (typeof cpu !== 'string') return undefined;
  return cpu
    .split(',')
    .map((part) => /^\s*(.+?)\s+(\d+)$/.exec(part))
    .filter(Boolean)
    .map(([, name, pct]) => ({ name, pct: Number(pct) }))
    .sort((a, b) => b.pct - a.pct)[0];
}

/** Rows worth comparing across replica counts: peaks and capacity figures. */
const comparable = (row) =>
  row.throughput !== undefined &&
  !row.baseline &&
  (row.peak || row.unit === 'items/s' || row.unit === 'deliveries/s');

// ---------------------------------------------------------------------------------------
// Markdown.

const cell = (value) =>
  value === undefined || value === null || value === '' ? '' : String(value).replace(/\|/g, '\\|');
const table = (headers, rows) =>
  [
    `| ${headers.join(' | ')} |`,
    `| ${headers.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
const ratio = (value, of) => (value && of ? round(value / of) : undefined);
const replicasName = (n) => `${n} replica${n === 1 ? '' : 's'}`;

function runSection(run, peaks) {
  const lines = [
    `### ${run.bench}, ${replicasName(run.replicas)}: ${run.status === 'ok' ? 'ok' : '**FAILED**'}`,
    '',
    `${run.seconds} s; settings ${Object.entries(run.settings)
      .map(([key, value]) => `\`${key}=${value}\``)
      .join(' ')}; full output in \`${run.log}\` (not committed)`,
    '',
  ];
  if (run.status !== 'ok') {
    const why = run.timedOut
      ? 'ran over its time limit'
      : `exit code ${run.exitCode}${run.signal ? `, signal ${run.signal}` : ''}`;
    lines.push(`Failed (${why}); the end of its output:`, '', '```text', run.errorTail, '```', '');
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
        ],
        rows.map((row) => {
          const versus = row.peak && row.unit === 'req/s';
          return [
            row.label,
            row.target,
            row.throughput === undefined ? '' : `${row.throughput} ${row.unit}`,
            row.p50,
            row.p99,
            row.errors,
            row.cpu,
            row.loadCpu,
            row.busy,
            versus ? ratio(row.throughput, peaks?.floor) : '',
            versus ? ratio(row.throughput, peaks?.bare) : '',
          ];
        }),
      ),
      '',
    );
  }
  const memory = memoryOf(run);
  if (memory.length > 0) {
    lines.push(
      `Peak RSS (VmHWM, MB): ${memory.map((row) => `${row.process} ${row['peak RSS MB']}`).join(' · ')}`,
      '',
    );
  }
  const verdicts = verdictsOf(run);
  if (verdicts.length > 0) lines.push(...verdicts.map((line) => `- ${line.trim()}`), '');
  return lines.join('\n');
}

/** The best platform peak of a run (req/s), with its row. */
function bestPeak(run) {
  return tablesOf(run)
    .flatMap((t) => t.rows)
    .filter((row) => row.peak && !row.baseline && row.unit === 'req/s')
    .sort((a, b) => b.throughput - a.throughput)[0];
}

/** Rows of two runs of one bench matched by table and label, with their ratio. */
function pairs(one, other) {
  const index = (run) => {
    const rows = new Map();
    for (const { title, rows: tableRows } of tablesOf(run)) {
      for (const row of tableRows.filter(comparable)) rows.set(`${title}\u0000${row.label}`, row);
    }
    return rows;
  };
  const first = index(one);
  const second = index(other);
  return [...first]
    .filter(([key]) => second.has(key))
    .map(([key, row]) => ({
      label: row.label,
      one: row,
      other: second.get(key),
      ratio: ratio(second.get(key).throughput, row.throughput),
    }));
}

/** One sentence on a bench's scaling, from its matched rows. */
function scalingSentence(bench, matched, replicas) {
  if (matched.length === 0)
    return { bench, kind: 'unknown', text: `${bench}: no figure to compare.` };
  const r = round(median(matched.map((pair) => pair.ratio)));
  const busyOne = Math.max(...matched.map((pair) => pair.one.busy ?? -1));
  const busyOther = Math.max(...matched.map((pair) => pair.other.busy ?? -1));
  const top = matched
    .map((pair) => busiest(pair.one.cpu))
    .filter(Boolean)
    .sort((a, b) => b.pct - a.pct)[0];
  const load = Math.max(...matched.map((pair) => pair.one.loadCpu ?? -1));
  const figures =
    `median ×${r} over ${matched.length} figure(s), e.g. ${matched[0].label}: ` +
    `${matched[0].one.throughput} → ${matched[0].other.throughput} ${matched[0].one.unit}`;
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

function markdown(result) {
  const { machine: m } = result;
  const peaks = result.baselines?.peaks;
  const runs = result.runs;
  const lines = [
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
    '## The baselines',
    '',
    peaks
      ? `What this machine does at all, in this run: bare Fastify peaks at **${peaks.bare} req/s**, ` +
        `the floor (Fastify → NATS → fixed reply) at **${peaks.floor} req/s**. Each platform peak ` +
        'below is also given as a ratio of these.'
      : 'The baselines did not complete: no ratios below.',
    '',
  ];
  if (result.baselines) lines.push(runSection(result.baselines, peaks));
  lines.push(
    '## Summary',
    '',
    table(
      [
        'bench',
        'replicas',
        'status',
        'seconds',
        'best platform peak',
        'req/s',
        '× floor',
        '× bare Fastify',
        'largest peak RSS',
      ],
      runs.map((run) => {
        const best = bestPeak(run);
        const memory = memoryOf(run)
          .filter((row) => !/^nats-server|^bench /.test(row.process))
          .sort((a, b) => b['peak RSS MB'] - a['peak RSS MB'])[0];
        return [
          run.bench,
          run.replicas,
          run.status === 'ok' ? 'ok' : '**failed**',
          run.seconds,
          best?.label,
          best?.throughput,
          ratio(best?.throughput, peaks?.floor),
          ratio(best?.throughput, peaks?.bare),
          memory ? `${memory.process} ${memory['peak RSS MB']} MB` : '',
        ];
      }),
    ),
    '',
  );
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
    for (const replicas of counts.slice(1)) {
      const rows = [];
      const sentences = [];
      for (const bench of [...new Set(runs.map((run) => run.bench))]) {
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
      const names = (kind) =>
        sentences
          .filter((s) => s.kind === kind)
          .map((s) => s.bench)
          .join(', ') || 'none';
      lines.push(
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
      );
    }
  }
  lines.push('## Each bench', '');
  for (const run of runs) lines.push(runSection(run, peaks));
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------

const jsonFile = join(outDir, 'latest.json');
const mdFile = join(outDir, 'latest.md');
/** Write latest.md from a result, both as `npm run lint` wants them (aligned tables). */
function writeMarkdown(result) {
  writeFileSync(mdFile, markdown(result));
  spawnSync(join(root, 'node_modules', '.bin', 'prettier'), ['--write', jsonFile, mdFile], {
    stdio: 'ignore',
  });
}
if (options.render) {
  writeMarkdown(JSON.parse(readFileSync(jsonFile, 'utf8')));
  log(`wrote ${relative(root, mdFile)} from ${relative(root, jsonFile)}`);
  process.exit(0);
}

try {
  ensureDependencies();
  // BENCH_SKIP_BUILD=1: run the dist as it is (the benches never build themselves here).
  if (process.env.BENCH_SKIP_BUILD !== '1') build();
} catch (error) {
  fail(error);
}
mkdirSync(logsDir, { recursive: true });
const resultsDir = mkdtempSync(join(os.tmpdir(), 'pcp-bench-'));
const startedAt = new Date();
const loadBefore = os.loadavg().map((value) => round(value));
const result = {
  command: `npm run bench --${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
  full: options.full,
  started: startedAt.toISOString(),
  machine: machine(),
  runs: [],
};
try {
  log('── the baselines');
  const baselines = await runBench('baselines', 1, resultsDir);
  result.baselines = {
    ...baselines,
    peaks: baselines.records.find((record) => record.kind === 'peaks')?.peaks,
  };
  for (const replicas of replicaCounts) {
    for (const bench of benches) {
      if (interrupted) break;
      result.runs.push(await runBench(bench, replicas, resultsDir));
    }
  }
} finally {
  rmSync(resultsDir, { recursive: true, force: true });
}
const finishedAt = new Date();
Object.assign(result, {
  finished: finishedAt.toISOString(),
  seconds: Math.round((finishedAt - startedAt) / 1000),
  loadAverage: { before: loadBefore, after: os.loadavg().map((value) => round(value)) },
  interrupted,
});
writeFileSync(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
writeMarkdown(result);
const failed = result.runs.filter((run) => run.status !== 'ok');
log(
  `wrote ${relative(root, mdFile)} and ${relative(root, jsonFile)} in ` +
    `${Math.round(result.seconds / 60)} min; ` +
    (failed.length === 0
      ? 'every bench ran'
      : `failed: ${failed.map((run) => `${run.bench} ×${run.replicas}`).join(', ')}`),
);
if (failed.length > 0 || result.baselines.status !== 'ok') process.exitCode = 1;
if (interrupted) process.exitCode = 130;
