import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

/** How one process is started and how it says it is ready. */
export interface ProcessSpec {
  /** Unique, e.g. `ordering#1`. */
  readonly name: string;
  /** The service, e.g. `ordering`: faults pick their victim by it. */
  readonly service: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  /** Answers 2xx once the process serves. */
  readonly readyUrl: string;
  readonly logFile: string;
}

/** A stretch of time a process was not serving: from its exit until it was ready again. */
export interface Downtime {
  readonly name: string;
  readonly from: number;
  /** Undefined while it is still down. */
  to: number | undefined;
}

const READY_POLL_MS = 200;
/** A process that dies sooner than this after starting waits longer before the next start. */
const CRASH_AT_START_MS = 10_000;

class Supervised {
  child: ChildProcess | undefined;
  startedAt = 0;
  ready = false;
  crashesAtStart = 0;
  down: Downtime | undefined;
  /** The environment of its next start (a fault may change it). */
  env: Record<string, string>;

  constructor(readonly spec: ProcessSpec) {
    this.env = { ...spec.env };
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs processes and starts again any that exits, as Kubernetes restarts a pod's container
 * (with a back-off for a process that keeps dying at start), recording each downtime.
 */
export class Supervisor {
  readonly downtimes: Downtime[] = [];
  readonly #processes = new Map<string, Supervised>();
  #stopping = false;
  #poller: NodeJS.Timeout | undefined;

  constructor(specs: readonly ProcessSpec[]) {
    for (const spec of specs) this.#processes.set(spec.name, new Supervised(spec));
  }

  /** Start every process and wait until all are ready. */
  async start(timeoutMs = 300_000): Promise<void> {
    for (const entry of this.#processes.values()) this.#launch(entry);
    this.#poller = setInterval(() => void this.#pollReadiness(), READY_POLL_MS);
    if (!(await this.waitAllReady(timeoutMs))) {
      const first = this.#processes.get(this.notReady()[0]!)!;
      const tail = readFileSync(first.spec.logFile, 'utf8').trim().split('\n').slice(-5);
      throw new Error(
        `not ready after ${timeoutMs / 1000} s: ${this.notReady().join(', ')}; ` +
          `the last lines of ${first.spec.name}:\n${tail.join('\n')}`,
      );
    }
  }

  /** Names of the processes of `service`. */
  replicas(service: string): string[] {
    return [...this.#processes.values()]
      .filter((entry) => entry.spec.service === service)
      .map((entry) => entry.spec.name);
  }

  /** SIGKILL a process; the supervisor starts it again. */
  kill(name: string): void {
    const entry = this.#processes.get(name);
    if (!entry?.child) throw new Error(`no process ${name}`);
    entry.child.kill('SIGKILL');
    // Not ready from now on, not from when its exit is reported: a wait for every process to
    // be ready right after a kill must wait for this one's restart.
    entry.ready = false;
  }

  names(): string[] {
    return [...this.#processes.keys()];
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
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        entry.ready = false;
        child.kill('SIGTERM');
        await exited;
      }
      if (!(await this.waitAllReady(timeoutMs))) throw new Error(`${name} did not come back`);
    }
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

  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#poller);
    const exits = [...this.#processes.values()].map(async ({ child }) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    });
    await Promise.all(exits);
  }

  #launch(entry: Supervised): void {
    const out = openSync(entry.spec.logFile, 'a');
    const child = spawn(process.execPath, [...entry.spec.args], {
      env: entry.env,
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    entry.child = child;
    entry.startedAt = Date.now();
    entry.ready = false;
    child.once('exit', () => {
      if (this.#stopping) return;
      entry.ready = false;
      if (!entry.down) {
        entry.down = { name: entry.spec.name, from: Date.now(), to: undefined };
        this.downtimes.push(entry.down);
      }
      entry.crashesAtStart =
        Date.now() - entry.startedAt < CRASH_AT_START_MS ? entry.crashesAtStart + 1 : 0;
      const backoffMs = Math.min(5_000, 250 * 2 ** entry.crashesAtStart);
      setTimeout(() => {
        if (!this.#stopping) this.#launch(entry);
      }, backoffMs);
    });
  }

  async #pollReadiness(): Promise<void> {
    await Promise.all(
      [...this.#processes.values()].map(async (entry) => {
        const { child } = entry;
        if (entry.ready || !child || child.killed || child.exitCode !== null) return;
        const ok = await fetch(entry.spec.readyUrl, { signal: AbortSignal.timeout(1_000) }).then(
          (response) => response.ok,
          () => false,
        );
        // The process may have been killed or died while the answer was on its way.
        if (!ok || entry.child !== child || child.killed || child.exitCode !== null) return;
        entry.ready = true;
        if (entry.down) {
          entry.down.to = Date.now();
          entry.down = undefined;
        }
      }),
    );
  }
}
