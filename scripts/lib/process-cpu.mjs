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

/** The local nats-server's pid, to report its CPU too (read-only; it is not ours). */
function natsServerPid() {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv0 = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0];
      if (argv0.endsWith('nats-server')) return Number(entry);
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}

/**
 * `withCpu(names, work)` runs `work` and reports the CPU % (of one core) each named process
 * used meanwhile (a child of `platform`, or `nats` for the local nats-server), this
 * process's own (the load generator) and how busy the whole machine was (% of all cores).
 */
export function cpuMeter(platform) {
  const natsPid = natsServerPid();
  const pidOf = (name) => (name === 'nats' ? natsPid : platform.children.get(name)?.pid);
  return async function withCpu(names, work) {
    const before = new Map(names.map((name) => [name, cpuTicks(pidOf(name))]));
    const machineBefore = machineTicks();
    const ownBefore = process.cpuUsage();
    const started = performance.now();
    const result = await work();
    const wall = (performance.now() - started) / 1000;
    const own = process.cpuUsage(ownBefore);
    const machineAfter = machineTicks();
    const cpu = names
      .map((name) => {
        const used = (cpuTicks(pidOf(name)) - before.get(name)) / clockTicks;
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
