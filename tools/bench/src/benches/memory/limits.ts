// Peak RSS against the manifests' memory limits: the rows of the memory bench's verdict table,
// and the Node heap flags a manifest's NODE_OPTIONS gives a container, as a process here
// (with no cgroup limit) needs them. Pure, so the unit tests run them over fixed figures.
import type { ManifestLimits } from './manifests.js';

/** A process fails when its peak RSS is above this share of its manifest's limit. */
export const LIMIT_SHARE = 0.8;

const MiB = 1024 ** 2;
const pct = (value: number, of: number) => Math.round((100 * value) / of);

export interface LimitRow {
  process: string;
  'peak RSS MiB': number;
  'base limit MiB': number;
  '% of base limit': number;
  /** The production overlay's limit, when it differs or could be rendered. */
  'production limit MiB'?: number;
  '% of production limit'?: number;
  /** FAIL above `share` of the base limit. */
  verdict: 'ok' | 'FAIL';
}

/**
 * One row per process that has a base manifest: its peak RSS (VmHWM, bytes) against the base
 * limit, which fails above LIMIT_SHARE, and against the production overlay's for reference.
 */
export function limitRows(
  peaks: ReadonlyMap<string, number>,
  limits: ManifestLimits,
  share = LIMIT_SHARE,
): LimitRow[] {
  return [...peaks].flatMap(([name, peakBytes]) => {
    const base = limits.base.get(name);
    if (!base) return [];
    const production = limits.production?.get(name);
    const ofBase = peakBytes / base.limitBytes;
    return [
      {
        process: name,
        'peak RSS MiB': Math.round(peakBytes / MiB),
        'base limit MiB': Math.round(base.limitBytes / MiB),
        '% of base limit': pct(peakBytes, base.limitBytes),
        ...(production
          ? {
              'production limit MiB': Math.round(production.limitBytes / MiB),
              '% of production limit': pct(peakBytes, production.limitBytes),
            }
          : {}),
        verdict: ofBase > share ? 'FAIL' : 'ok',
      },
    ];
  });
}

export const failing = (rows: readonly LimitRow[]) => rows.filter((row) => row.verdict === 'FAIL');

const HEAP_PERCENTAGE = /^--max[-_]old[-_]space[-_]size[-_]percentage=(\d+(?:\.\d+)?)$/;
const HEAP_FLAG = /^--max[-_](old|semi)[-_]space[-_]size=\d+$/;

/**
 * The heap flags of a manifest's NODE_OPTIONS for a process run without its container's
 * cgroup: `--max-old-space-size-percentage=P` becomes the size it gives under `limitBytes`
 * (Node takes the percentage of the cgroup's limit, here it would take the machine's); other
 * heap sizes pass as they are; everything else (the image's `--import`) is left out.
 */
export function heapFlags(nodeOptions: string | undefined, limitBytes: number): string[] {
  return (nodeOptions ?? '').split(/\s+/).flatMap((option) => {
    const percentage = HEAP_PERCENTAGE.exec(option);
    if (percentage) {
      return [
        `--max-old-space-size=${Math.floor((Number(percentage[1]) / 100) * (limitBytes / MiB))}`,
      ];
    }
    return HEAP_FLAG.test(option) ? [option] : [];
  });
}
