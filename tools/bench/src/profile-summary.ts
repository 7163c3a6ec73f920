// Where a service's CPU goes, from the V8 CPU profiles a bench writes with
// BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR": self time by area (a package, a service's
// feature folder, Node's internals, the garbage collector) and by function, as a share of the
// time the process was not idle. `npm run bench:profile -- DIR` prints one table per profile.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** The service whose sources hold the most self time, or "node" when none. */
  process: string;
  /** Milliseconds on CPU (every sample but the idle ones). */
  busyMs: number;
  areas: { area: string; ms: number; share: number }[];
  functions: { fn: string; area: string; ms: number; share: number }[];
}

/** The area a frame's self time belongs to: the shortest name that still says what it is. */
export function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    // V8's pseudo-frames: (garbage collector), (program), (idle), (root).
    return functionName.startsWith('(') ? functionName : 'native';
  }
  if (url.startsWith('node:')) return 'node internals';
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const modules = file.lastIndexOf('/node_modules/');
  if (modules !== -1) {
    const parts = file.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  // Our own code: the workspace and its first folder under src, e.g. "ordering/place".
  const own = /\/(services|packages)\/([^/]+)\/(?:src|dist)\/(?:([^/]+)\/)?/.exec(file);
  if (own) return own[3] ? `${own[2]}/${own[3]}` : own[2]!;
  return path.basename(file);
}

export function summarizeProfile(profile: CpuProfile, top = 12): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  // timeDeltas[i] is the time before sample i; attribute it to the sample it leads to.
  profile.samples.forEach((id, index) => {
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const areas = new Map<string, number>();
  const functions = new Map<string, { area: string; micros: number }>();
  const services = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') continue;
    busy += micros;
    const area = areaOf(frame);
    areas.set(area, (areas.get(area) ?? 0) + micros);
    const name =
      `${frame.functionName || '(anonymous)'} ${frame.url ? `${path.basename(frame.url)}:${frame.lineNumber + 1}` : ''}`.trim();
    const entry = functions.get(name) ?? { area, micros: 0 };
    entry.micros += micros;
    functions.set(name, entry);
    const service = /\/services\/([^/]+)\//.exec(frame.url)?.[1];
    if (service) services.set(service, (services.get(service) ?? 0) + micros);
  }
  const share = (micros: number) => (busy === 0 ? 0 : Math.round((micros / busy) * 1000) / 10);
  const ms = (micros: number) => Math.round(micros / 100) / 10;
  return {
    process: [...services].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'node',
    busyMs: ms(busy),
    areas: [...areas]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, micros]) => ({ area, ms: ms(micros), share: share(micros) })),
    functions: [...functions]
      .sort((a, b) => b[1].micros - a[1].micros)
      .slice(0, top)
      .map(([fn, { area, micros }]) => ({ fn, area, ms: ms(micros), share: share(micros) })),
  };
}

function profilesIn(target: string): string[] {
  if (!statSync(target).isDirectory()) return [target];
  return readdirSync(target)
    .filter((name) => name.endsWith('.cpuprofile'))
    .map((name) => path.join(target, name));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const targets = process.argv.slice(2);
  if (targets.length === 0) {
    process.stderr.write('usage: npm run bench:profile -- <dir or .cpuprofile>...\n');
    process.exit(2);
  }
  for (const file of targets.flatMap(profilesIn)) {
    const summary = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
    console.log(`\n${summary.process}: ${summary.busyMs} ms on CPU (${path.basename(file)})`);
    console.table(summary.areas.map(({ area, ms, share }) => ({ area, ms, '%': share })));
    console.table(
      summary.functions.map(({ fn, area, ms, share }) => ({ fn, area, ms, '%': share })),
    );
  }
}
