import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repositoryRoot } from '@pcp/service-kit/local-processes';
import { describeReadiness, errorSummary, formatLine, paint } from './log-lines.js';

/** How one process is started and how it says it is ready. */
export interface ProcessSpec {
  /** Unique, e.g. `ordering` or `ordering#2`. */
  readonly name: string;
  /** The service, e.g. `ordering`: what `replicas` and `restartWith` select by. */
  readonly service: string;
  /** Node's arguments (`process.execPath` runs them). */
  readonly args: readonly string[];
  /** Its whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Each answers 2xx once the process serves (a gateway cluster has one per worker). */
  readonly readyUrls: readonly string[];
}

/**
 * Where the processes' output goes: `stdout` as readable lines prefixed with the process's
 * name; `inherit` as it comes; `ignore`; or `{ dir }`, a file per process (`ordering-2.log`).
 */
export type LogTarget = 'stdout' | 'inherit' | 'ignore' | { readonly dir: string };

/** When a process that exited starts again. */
export interface RestartPolicy {
  /** The delay after an exit; it doubles with each crash at start in a row. */
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
  /** A process that dies sooner than this after starting is crashing at start. */
  readonly crashAtStartMs: number;
  /** Crashes at start in a row that make a crash loop, explained once. */
  readonly crashLoopAfter: number;
}

/** `npm start`'s policy: 1 s, 2 s, 4 s… up to 30 s while a process keeps dying at start. */
export const developerRestarts: RestartPolicy = {
  firstDelayMs: 1_000,
  maxDelayMs: 30_000,
  crashAtStartMs: 30_000,
  crashLoopAfter: 2,
};

export interface SupervisorOptions {
  /** `false`: a process that exits stays down (and is reported). Default `developerRestarts`. */
  readonly restart?: RestartPolicy | false;
  /** Default `stdout`. */
  readonly logs?: LogTarget;
  /** Where the supervisor's own lines go (exits, restarts, crash loops). Default stdout. */
  readonly say?: (message: string) => void;
}

/** A stretch of time a process was not serving: from its exit until it was ready again. */
export interface Downtime {
  readonly name: string;
  readonly from: number;
  /** Undefined while it is still down. */
  to: number | undefined;
}

const READY_POLL_MS = 200;
const STOP_GRACE_MS = 15_000;
const KEPT_ERROR_LINES = 6;

class Supervised {
  child: ChildProcess | undefined;
  startedAt = 0;
  ready = false;
  polling = false;
  crashesAtStart = 0;
  down: Downtime | undefined;
  /** The last answer of its readiness URL, in short. */
  readiness: string | undefined;
  /** Its last error lines in short (output to stdout only). */
  errorLines: string[] = [];
  /** The environment of its next start (`restartWith` changes it). */
  env: Record<string, string>;

  constructor(readonly spec: ProcessSpec) {
    this.env = { ...spec.env };
  }

  get running(): boolean {
    const { child } = this;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs processes and starts again any that exits, as Kubernetes restarts a pod's container
 * (with a back-off for a process that keeps dying at start, explained once as a crash loop),
 * polling each one's readiness and recording each downtime.
 */
export class Supervisor {
  readonly downtimes: Downtime[] = [];
  readonly #processes = new Map<string, Supervised>();
  readonly #restart: RestartPolicy | false;
  readonly #logs: LogTarget;
  readonly #say: (message: string) => void;
  #stopping: Promise<void> | undefined;
  #poller: NodeJS.Timeout | undefined;

  constructor(options: SupervisorOptions = {}) {
    this.#restart = options.restart ?? developerRestarts;
    this.#logs = options.logs ?? 'stdout';
    this.#say =
      options.say ?? ((message) => process.stdout.write(`${paint(90, '[platform]')} ${message}\n`));
    if (typeof this.#logs === 'object') mkdirSync(this.#logs.dir, { recursive: true });
  }

  /**
   * Start `specs` (added to those already running) and wait until they are ready; throws after
   * `timeoutMs` naming those that are not, with the last lines of the first one's log file.
   */
  async start(specs: readonly ProcessSpec[], timeoutMs = 300_000): Promise<void> {
    for (const spec of specs) {
      if (this.#processes.has(spec.name)) throw new Error(`${spec.name} is already supervised`);
      const entry = new Supervised(spec);
      this.#processes.set(spec.name, entry);
      this.#launch(entry);
    }
    this.#poller ??= setInterval(() => this.#pollReadiness(), READY_POLL_MS);
    const names = new Set(specs.map((spec) => spec.name));
    const deadline = Date.now() + timeoutMs;
    while (this.notReady().some((name) => names.has(name))) {
      if (this.#stopping) throw new Error('stopped while starting');
      if (Date.now() > deadline) {
        const waiting = this.notReady().filter((name) => names.has(name));
        const first = this.#processes.get(waiting[0]!)!;
        const tail = this.#logTail(first, 5);
        throw new Error(
          `not ready after ${timeoutMs / 1000} s: ${waiting.join(', ')}` +
            (tail.length ? `; the last lines of ${first.spec.name}:\n${tail.join('\n')}` : ''),
        );
      }
      await sleep(READY_POLL_MS);
    }
  }

  /** Every process's name, in start order. */
  names(): string[] {
    return [...this.#processes.keys()];
  }

  /** Names of the processes of `service`. */
  replicas(service: string): string[] {
    return [...this.#processes.values()]
      .filter((entry) => entry.spec.service === service)
      .map((entry) => entry.spec.name);
  }

  /** The process running as `name` now (a restart replaces it), if any. */
  child(name: string): ChildProcess | undefined {
    return this.#processes.get(name)?.child;
  }

  /** Where `name` logs with `logs: { dir }`. */
  logFile(name: string): string | undefined {
    return typeof this.#logs === 'object'
      ? join(this.#logs.dir, `${name.replace(/#/g, '-')}.log`)
      : undefined;
  }

  notReady(): string[] {
    return [...this.#processes.values()]
      .filter((entry) => !entry.ready)
      .map((entry) => entry.spec.name);
  }

  /** True once every process is ready, false if some still is not after `timeoutMs`. */
  async waitAllReady(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.notReady().length > 0) {
      if (Date.now() > deadline) return false;
      await sleep(READY_POLL_MS);
    }
    return true;
  }

  get size(): number {
    return this.#processes.size;
  }

  /** Send `signal` (default SIGKILL) to a process; the supervisor starts it again. */
  kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): void {
    const entry = this.#processes.get(name);
    if (!entry?.child) throw new Error(`no process ${name}`);
    entry.child.kill(signal);
    // Not ready from now on, not from when its exit is reported: a wait for every process to
    // be ready right after a kill must wait for this one's restart.
    entry.ready = false;
  }

  /**
   * Start every replica of `service` again, one at a time (as a rolling update does), with
   * `changes` to its environment (a value of undefined removes the variable).
   */
  async restartWith(
    service: string,
    changes: Record<string, string | undefined>,
    timeoutMs = 60_000,
  ): Promise<void> {
    for (const name of this.replicas(service)) {
      const entry = this.#processes.get(name)!;
      for (const [variable, value] of Object.entries(changes)) {
        if (value === undefined) delete entry.env[variable];
        else entry.env[variable] = value;
      }
      const child = entry.child;
      if (child && entry.running) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        entry.ready = false;
        child.kill('SIGTERM');
        await exited;
      }
      if (!(await this.waitAllReady(timeoutMs))) throw new Error(`${name} did not come back`);
    }
  }

  /**
   * SIGTERM every process (SIGKILL after `graceMs`) and wait until all have exited; restarts
   * stop. Safe to call twice.
   */
  stop(graceMs = STOP_GRACE_MS): Promise<void> {
    return (this.#stopping ??= this.#stopAll(graceMs));
  }

  async #stopAll(graceMs: number): Promise<void> {
    clearInterval(this.#poller);
    const exits = [...this.#processes.values()].map(async (entry) => {
      const { child } = entry;
      if (!child || !entry.running) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    });
    await Promise.all(exits);
  }

  #launch(entry: Supervised): void {
    const logs = this.#logs;
    const file = this.logFile(entry.spec.name);
    const out = file ? openSync(file, 'a') : undefined;
    const stdio: StdioOptions =
      out !== undefined
        ? ['ignore', out, out]
        : logs === 'stdout'
          ? ['ignore', 'pipe', 'pipe']
          : typeof logs === 'string'
            ? ['ignore', logs, logs]
            : 'ignore';
    const child: ChildProcess = spawn(process.execPath, [...entry.spec.args], {
      cwd: repositoryRoot,
      env: entry.env,
      stdio,
    });
    if (out !== undefined) closeSync(out);
    entry.child = child;
    entry.startedAt = Date.now();
    entry.ready = false;
    entry.readiness = undefined;
    entry.errorLines = [];
    if (logs === 'stdout') this.#printLines(entry, child);
    // 'close', not 'exit': the last lines (the fatal error) are read by then.
    child.once('close', (code, signal) => this.#exited(entry, code, signal));
  }

  #printLines(entry: Supervised, child: ChildProcess): void {
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        process.stdout.write(`${formatLine(entry.spec.name, entry.spec.service, line)}\n`);
        const summary = errorSummary(line, stream === child.stderr);
        if (summary) {
          entry.errorLines.push(summary);
          if (entry.errorLines.length > KEPT_ERROR_LINES) entry.errorLines.shift();
        }
      });
    }
  }

  #exited(entry: Supervised, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#stopping) return;
    entry.ready = false;
    if (!entry.down) {
      entry.down = { name: entry.spec.name, from: Date.now(), to: undefined };
      this.downtimes.push(entry.down);
    }
    const policy = this.#restart;
    if (!policy) {
      this.#say(`${entry.spec.name} exited early (${signal ?? code})`);
      return;
    }
    // A process that ran a while before dying starts over with the first delay.
    entry.crashesAtStart =
      Date.now() - entry.startedAt < policy.crashAtStartMs ? entry.crashesAtStart + 1 : 0;
    if (entry.crashesAtStart === policy.crashLoopAfter) this.#explainCrashLoop(entry, policy);
    const delay = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** entry.crashesAtStart);
    this.#say(`${entry.spec.name} exited (${signal ?? code}); restarting in ${delay / 1000}s`);
    setTimeout(() => {
      if (!this.#stopping) this.#launch(entry);
    }, delay).unref();
  }

  /** Once per crash loop: what the dead run's readiness said, and its last errors. */
  #explainCrashLoop(entry: Supervised, policy: RestartPolicy): void {
    const errors =
      entry.errorLines.length > 0
        ? entry.errorLines
        : this.#logTail(entry, 40)
            .map((line) => errorSummary(line, true))
            .filter((line): line is string => line !== undefined)
            .slice(-KEPT_ERROR_LINES);
    const lines = [
      `${entry.spec.name} keeps crashing at start (${policy.crashLoopAfter} times in a row, ` +
        `each within ${policy.crashAtStartMs / 1000}s)`,
      `  readiness at ${entry.spec.readyUrls.join(', ')}: ${entry.readiness ?? 'never answered'}`,
      errors.length > 0 ? '  its last errors:' : '  it logged no error; see its lines',
      ...errors.map((line) => `    ${line}`),
    ];
    this.#say(paint(31, lines.join('\n')));
  }

  #logTail(entry: Supervised, count: number): string[] {
    const file = this.logFile(entry.spec.name);
    if (!file) return entry.errorLines;
    try {
      return readFileSync(file, 'utf8').trim().split('\n').slice(-count);
    } catch {
      return [];
    }
  }

  #pollReadiness(): void {
    for (const entry of this.#processes.values()) {
      const { child } = entry;
      if (entry.ready || entry.polling || !child || !entry.running || child.killed) continue;
      entry.polling = true;
      void Promise.all(entry.spec.readyUrls.map((url) => this.#ask(entry, url)))
        .then((answers) => {
          // The process may have been killed or died while the answers were on their way.
          if (!answers.every(Boolean) || entry.child !== child || !entry.running || child.killed)
            return;
          entry.ready = true;
          if (entry.down) {
            entry.down.to = Date.now();
            entry.down = undefined;
          }
        })
        .finally(() => {
          entry.polling = false;
        });
    }
  }

  async #ask(entry: Supervised, url: string): Promise<boolean> {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      entry.readiness = describeReadiness(response.status, await response.text());
      return response.ok;
    } catch {
      return false;
    }
  }
}
