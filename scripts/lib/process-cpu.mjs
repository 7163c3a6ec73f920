// CPU time of processes over a run, from /proc (user + system clock ticks), for the bench
// scripts' "where the time goes" columns.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadRow } from './paced-load.mjs';

export const cpus = availableParallelism();
const clockTicks =
  Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

function cpuTicks(pid) {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/** Busy and total jiffies of the whole machine (every process, this benchmark's or not). */
function machineTicks() {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const ticks = values.slice(0, 8).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - ticks[3] - ticks[4], total };
}

/** Pids of the local processes whose command name is `comm` (read-only; they are not ours). */
function pidsNamed(comm) {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * The shared servers by name: `nats` (nats-server), `postgres` (the postmaster and every
 * backend, so the bench's queries and whatever else the server does meanwhile) and `redis`.
 */
const SERVER_COMMS = { nats: 'nats-server', postgres: 'postgres', redis: 'redis-server' };

/**
 * `withCpu(names, work)` runs `work` and reports the CPU % (of one core) each named process
 * used meanwhile (a child of `platform`, or a shared server of SERVER_COMMS), this process's
 * own (the load generator) and how busy the whole machine was (% of all cores).
 */
export function cpuMeter(platform) {
  // Ticks per pid of a name: a child of the platform with its replicas and their workers
  // (BENCH_REPLICAS), or every process of a server, listed anew each time (Postgres starts a
  // backend per connection and ends it when it closes).
  const ticksOf = (name) => {
    const comm = SERVER_COMMS[name];
    const pids = comm ? pidsNamed(comm) : platform.pidsOf(name);
    // No such child (yet): NaN, so the column leaves it out rather than show 0.
    if (pids.length === 0) return new Map([[undefined, NaN]]);
    return new Map(pids.map((pid) => [pid, cpuTicks(pid)]));
  };
  // A process that ended meanwhile took its ticks with it: only the ones still here count.
  const usedTicks = (before, after) => {
    let used = 0;
    for (const [pid, ticks] of after) used += ticks - (before.get(pid) ?? 0);
    return used;
  };
  return async function withCpu(names, work) {
    const before = new Map(names.map((name) => [name, ticksOf(name)]));
    const machineBefore = machineTicks();
    const ownBefore = process.cpuUsage();
    const started = performance.now();
    const result = await work();
    const wall = (performance.now() - started) / 1000;
    const own = process.cpuUsage(ownBefore);
    const machineAfter = machineTicks();
    const cpu = names
      .map((name) => {
        const used = usedTicks(before.get(name), ticksOf(name)) / clockTicks;
        return Number.isFinite(used) ? `${name} ${Math.round((100 * used) / wall)}` : undefined;
      })
      .filter(Boolean);
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

/** A load result measured by `withCpu` as console.table columns, CPU included. */
export function cpuLoadRow(label, rate, result) {
  return {
    run: label,
    ...loadRow(rate, result),
    'server CPU % (1 core = 100)': result.serverCpu,
    'bench CPU %': result.loadCpu,
    [`machine busy % (${cpus} cores)`]: result.machineBusy,
  };
}
