// CPU time of processes over a run, from /proc, for the benches' "where the time goes" columns.
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { BenchPlatform } from '../platform/bench-platform.js';
import { clockTicks, cpuTicks, machineTicks, pidsNamed } from '../platform/proc.js';
import { loadRow, type LoadResult } from './paced-load.js';

export const cpus = availableParallelism();

/**
 * The shared servers by name: `nats` (nats-server), `postgres` (the postmaster and every
 * backend, so the bench's queries and whatever else the server does meanwhile) and `redis`.
 */
const SERVER_COMMS: Record<string, string> = {
  nats: 'nats-server',
  postgres: 'postgres',
  redis: 'redis-server',
};

export interface CpuFigures {
  /** "gateway 95, ordering 80": % of one core per named process. */
  serverCpu: string;
  /** This process's own (the load generator). */
  loadCpu: number;
  /** The whole machine, % of all cores. */
  machineBusy: number;
}

export type WithCpu = <T extends object>(
  names: string[],
  work: () => Promise<T>,
) => Promise<T & CpuFigures>;

/**
 * `withCpu(names, work)` runs `work` and reports the CPU % (of one core) each named process
 * used meanwhile (a child of `platform`, or a shared server of SERVER_COMMS), this process's
 * own and how busy the whole machine was.
 */
export function cpuMeter(platform: BenchPlatform): WithCpu {
  // Ticks per pid of a name, listed anew each time (Postgres starts a backend per
  // connection and ends it when it closes).
  const ticksOf = (name: string): Map<number | undefined, number> => {
    const comm = SERVER_COMMS[name];
    const pids = comm ? pidsNamed(comm) : platform.pidsOf(name);
    // No such child (yet): NaN, so the column leaves it out rather than show 0.
    if (pids.length === 0) return new Map([[undefined, NaN]]);
    return new Map(pids.map((pid) => [pid, cpuTicks(pid)]));
  };
  // A process that ended meanwhile took its ticks with it: only the ones still here count.
  const usedTicks = (
    before: Map<number | undefined, number> | undefined,
    after: Map<number | undefined, number>,
  ) => {
    let used = 0;
    for (const [pid, ticks] of after) used += ticks - (before?.get(pid) ?? 0);
    return used;
  };
  return async (names, work) => {
    const before = new Map(names.map((name) => [name, ticksOf(name)]));
    const machineBefore = machineTicks();
    const ownBefore = process.cpuUsage();
    const started = performance.now();
    const result = await work();
    const wall = (performance.now() - started) / 1000;
    const own = process.cpuUsage(ownBefore);
    const machineAfter = machineTicks();
    const cpu = names.flatMap((name) => {
      const used = usedTicks(before.get(name), ticksOf(name)) / clockTicks;
      return Number.isFinite(used) ? [`${name} ${Math.round((100 * used) / wall)}`] : [];
    });
    return {
      ...result,
      serverCpu: cpu.join(', '),
      loadCpu: Math.round((100 * (own.user + own.system)) / 1e6 / wall),
      machineBusy: Math.round(
        (100 * (machineAfter.busy - machineBefore.busy)) /
          (machineAfter.total - machineBefore.total),
      ),
    };
  };
}

/** The CPU columns of a withCpu result. */
export const cpuColumns = (result: Partial<CpuFigures>) => ({
  'server CPU % (1 core = 100)': result.serverCpu,
  'bench CPU %': result.loadCpu,
  [`machine busy % (${cpus} cores)`]: result.machineBusy,
});

/** A load result measured by `withCpu` as console.table columns, CPU included. */
export function cpuLoadRow(
  label: string,
  rate: number | string | undefined,
  result: LoadResult & CpuFigures,
) {
  return { run: label, ...loadRow(rate, result), ...cpuColumns(result) };
}
