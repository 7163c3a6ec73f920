// What Linux's /proc says about a process: its memory and its children.
import { readdirSync, readFileSync } from 'node:fs';

/** Resident memory of a process now and at its peak (VmHWM), in bytes. */
export interface Memory {
  readonly rssBytes: number;
  readonly peakRssBytes: number;
}

/** The memory of `pid`, or undefined once it is gone (or off Linux). */
export function memoryOf(pid: number): Memory | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const bytes = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rssBytes: bytes('VmRSS'), peakRssBytes: bytes('VmHWM') };
}

/** Every process's parent pid, from /proc (pid → ppid). */
function parentPids(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  return parents;
}

/** The children of each of `pids`, ascending (the order a parent forked them). */
export function childrenOf(pids: readonly number[]): Map<number, number[]> {
  const parents = parentPids();
  return new Map(
    pids.map((pid) => [
      pid,
      [...parents]
        .filter(([, parent]) => parent === pid)
        .map(([child]) => child)
        .sort((a, b) => a - b),
    ]),
  );
}
