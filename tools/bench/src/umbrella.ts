// `npm run bench`: every bench in one run, and the baselines they are measured against, so each
// figure is also a ratio to what this machine can do at all. Each bench runs as a child
// process, first with one process per service, then with BENCH_REPLICAS=2; its records come
// back through BENCH_RESULTS_FILE (report.ts). A bench that fails is recorded as failed, with
// the tail of its output, and the run goes on.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative } from 'node:path';
import { build, ensureDependencies, fail, log, root } from '@pcp/setup';
import type { BenchName } from './benches/index.js';
import { mergeResults } from './history.js';
import { tsEntry } from './ts-modules.js';
import type { BenchRecord } from './report.js';
import { markdown, type BenchRun, type Peaks, type UmbrellaResult } from './summary.js';

/** The benches of the umbrella run, in order (the baselines run first, always). */
const BENCHES = [
  'ingest',
  'stores',
  'discovery',
  'discovery-dense',
  'cart',
  'payments',
  'orders',
  'webhooks',
  'store-webhooks',
  'acceptance',
  'memory',
] as const satisfies readonly BenchName[];
/**
 * Umbrella-sized settings per bench (about 20 min per replica count on 2 cores), under any
 * BENCH_* set in the environment; --full runs each with its own defaults.
 */
const UMBRELLA: Partial<Record<BenchName, Record<string, string>>> = {
  baselines: { BENCH_SECONDS: '5' },
  ingest: { BENCH_RUNS: '1', BENCH_POLL_SIZE: '10000', BENCH_SECONDS: '5' },
  stores: { BENCH_SECONDS: '5' },
  discovery: { BENCH_SECONDS: '5' },
  'discovery-dense': { BENCH_SECONDS: '5' },
  cart: { BENCH_SECONDS: '5' },
  payments: { BENCH_SECONDS: '5' },
  orders: { BENCH_SECONDS: '5' },
  webhooks: { BENCH_ORDERS: '500' },
  // Still the 1,000 partners: the fan-out's size is what is measured; fewer events.
  'store-webhooks': { BENCH_STORE_EVENTS: '3', BENCH_PHASE_MS: '5000' },
  // Half the default burst: still past what one sweep transaction takes, in half the time.
  acceptance: { BENCH_ORDERS: '3000' },
  // A minute per phase: the least that reaches the plateau the peak RSS is measured at.
  memory: { BENCH_PHASE_SECONDS: '60' },
};
const TAIL_BYTES = 6_000;

export interface UmbrellaOptions {
  only?: string;
  replicas: string;
  full: boolean;
  out?: string;
  'timeout-minutes'?: string;
  render: boolean;
}

const round = (value: number) => Math.round(value * 100) / 100;
const git = (...args: string[]) =>
  spawnSync('git', args, { cwd: root, encoding: 'utf8' }).stdout?.trim();

function machine(): UmbrellaResult['machine'] {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model,
    memoryGB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    commit: git('rev-parse', 'HEAD'),
    uncommittedChanges: Boolean(git('status', '--porcelain')),
  };
}

function readRecords(file: string): BenchRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line) => {
      if (!line) return [];
      try {
        return [JSON.parse(line) as BenchRecord];
      } catch {
        return []; // a line cut short by a crash
      }
    });
}

interface RunContext {
  full: boolean;
  outDir: string;
  logsDir: string;
  resultsDir: string;
  timeoutMinutes: number;
}

/** Run one bench as a child; its records, status and the tail of its output. */
async function runBench(name: BenchName, replicas: number, context: RunContext): Promise<BenchRun> {
  const label = `${name}-x${replicas}`;
  const resultsFile = join(context.resultsDir, `${label}.jsonl`);
  const logFile = join(context.logsDir, `${label}.log`);
  const env = {
    ...(context.full ? {} : UMBRELLA[name]),
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
  const child = spawn(process.execPath, [...tsEntry('cli.ts'), name], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tee = (target: NodeJS.WriteStream) => (chunk: Buffer) => {
    target.write(chunk);
    logStream.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
  };
  child.stdout.on('data', tee(process.stdout));
  child.stderr.on('data', tee(process.stderr));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    process.stderr.write(
      `[bench] ${name} ran over ${context.timeoutMinutes} min: interrupting it\n`,
    );
    child.kill('SIGINT');
    // Its clean-up gets a minute; after that it is killed (its services may then linger).
    setTimeout(() => child.kill('SIGKILL'), 60_000).unref();
  }, context.timeoutMinutes * 60_000);
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>(
    (resolve) =>
      child.once('close', (exitCode, exitSignal) =>
        resolve({ code: exitCode, signal: exitSignal }),
      ),
  );
  clearTimeout(timer);
  await new Promise((resolve) => logStream.end(resolve));
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
    log: relative(context.outDir, logFile),
    ...(ok ? {} : { errorTail: tail.split('\n').slice(-40).join('\n') }),
    records: readRecords(resultsFile),
  };
}

/** The results already in `file`, to merge into; undefined when there are none to read. */
function earlierResult(file: string): UmbrellaResult | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as UmbrellaResult;
  } catch {
    return undefined;
  }
}

/** Write latest.md from a result, both as `npm run lint` wants them (aligned tables). */
function writeMarkdown(result: UmbrellaResult, jsonFile: string, mdFile: string): void {
  writeFileSync(mdFile, markdown(result));
  spawnSync(join(root, 'node_modules', '.bin', 'prettier'), ['--write', jsonFile, mdFile], {
    stdio: 'ignore',
  });
}

/** Parse the umbrella's options: the benches and replica counts to run, the time limit. */
function plan(options: UmbrellaOptions) {
  const only = options.only?.split(',').map((name) => name.trim()) ?? [...BENCHES];
  const unknown = only.filter((name) => !(BENCHES as readonly string[]).includes(name));
  if (unknown.length > 0 || only.length === 0) {
    fail(new Error(`--only lists some of ${BENCHES.join(', ')}; unknown: ${unknown.join(', ')}`));
  }
  const replicaCounts = options.replicas.split(',').map(Number);
  if (replicaCounts.some((n) => !Number.isInteger(n) || n < 1 || n > 8)) {
    fail(new Error('--replicas lists integers from 1 to 8, e.g. 1,2'));
  }
  const timeoutMinutes = Number(options['timeout-minutes'] ?? (options.full ? 60 : 20));
  if (!(timeoutMinutes > 0)) fail(new Error('--timeout-minutes must be positive'));
  return {
    benches: BENCHES.filter((name) => only.includes(name)),
    replicaCounts,
    timeoutMinutes,
  };
}

export async function runAll(options: UmbrellaOptions): Promise<void> {
  const { benches, replicaCounts, timeoutMinutes } = plan(options);
  const outDir = options.out ?? join(root, 'bench', 'results');
  const logsDir = join(outDir, 'logs');
  const jsonFile = join(outDir, 'latest.json');
  const mdFile = join(outDir, 'latest.md');
  if (options.render) {
    writeMarkdown(JSON.parse(readFileSync(jsonFile, 'utf8')) as UmbrellaResult, jsonFile, mdFile);
    log(`wrote ${relative(root, mdFile)} from ${relative(root, jsonFile)}`);
    return;
  }

  let interrupted = false;
  process.on('SIGINT', () => {
    // Not forwarded: the terminal's SIGINT reaches the bench child too (the same process
    // group), and a second one would end it before its clean-up. A SIGINT to this process
    // alone lets the current bench finish.
    interrupted = true;
    process.stderr.write('\n[bench] interrupted: writing what was measured once this bench ends\n');
  });
  try {
    ensureDependencies();
    // BENCH_SKIP_BUILD=1: run the dist as it is (the benches never build themselves here).
    if (process.env.BENCH_SKIP_BUILD !== '1') build();
  } catch (error) {
    fail(error);
  }
  mkdirSync(logsDir, { recursive: true });
  const resultsDir = mkdtempSync(join(os.tmpdir(), 'pcp-bench-'));
  const context = { full: options.full, outDir, logsDir, resultsDir, timeoutMinutes };
  const startedAt = new Date();
  const loadBefore = os.loadavg().map(round);
  const argv = process.argv.slice(2);
  const started = {
    command: `npm run bench --${argv.length ? ` ${argv.join(' ')}` : ''}`,
    full: options.full,
    started: startedAt.toISOString(),
    machine: machine(),
  };
  let baselines: UmbrellaResult['baselines'];
  const runs: BenchRun[] = [];
  try {
    log('── the baselines');
    const run = await runBench('baselines', 1, context);
    const peaks = run.records.find((record) => record.kind === 'peaks')?.peaks as Peaks | undefined;
    baselines = { ...run, peaks };
    for (const replicas of replicaCounts) {
      for (const bench of benches) {
        if (interrupted) break;
        runs.push(await runBench(bench, replicas, context));
      }
    }
  } finally {
    rmSync(resultsDir, { recursive: true, force: true });
  }
  const finishedAt = new Date();
  const measured: UmbrellaResult = {
    ...started,
    runs,
    baselines,
    finished: finishedAt.toISOString(),
    seconds: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
    loadAverage: { before: loadBefore, after: os.loadavg().map(round) },
    interrupted,
  };
  // The benches not run keep their figures; those run keep their previous ones beside.
  const result = mergeResults(earlierResult(jsonFile), measured, BENCHES);
  writeFileSync(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
  writeMarkdown(result, jsonFile, mdFile);
  const failed = runs.filter((run) => run.status !== 'ok');
  log(
    `wrote ${relative(root, mdFile)} and ${relative(root, jsonFile)} in ` +
      `${Math.round(result.seconds / 60)} min; ` +
      (failed.length === 0
        ? 'every bench ran'
        : `failed: ${failed.map((run) => `${run.bench} ×${run.replicas}`).join(', ')}`),
  );
  if (failed.length > 0 || baselines?.status !== 'ok') process.exitCode = 1;
  if (interrupted) process.exitCode = 130;
}
