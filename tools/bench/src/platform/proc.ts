// What /proc says about local processes for the CPU and memory figures: listening sockets,
// command names, CPU ticks (memory and children: @pcp/platform's).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const pidEntries = () => readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));

/**
 * The pid listening on a local TCP port: the socket's inode from /proc/net/tcp{,6}, then the
 * process holding it among those whose descriptors this user may read; undefined otherwise.
 */
export function pidListeningOn(port: number): number | undefined {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT; state 0A is LISTEN; the inode is the 10th field.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A' && fields[9]) {
        inodes.add(fields[9]);
      }
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of pidEntries()) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${entry}/fd/${fd}`);
        if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) return Number(entry);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** Pids of the local processes whose command name is `comm`. */
export function pidsNamed(comm: string): number[] {
  const pids: number[] = [];
  for (const entry of pidEntries()) {
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

export const clockTicks =
  Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** User + system clock ticks a process has used, NaN when it is gone. */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/** Busy and total jiffies of the whole machine (every process, this benchmark's or not). */
export function machineTicks(): { busy: number; total: number } {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const ticks = values.slice(0, 8).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - ticks[3]! - ticks[4]!, total };
}
