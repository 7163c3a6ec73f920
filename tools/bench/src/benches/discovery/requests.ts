// What the discovery benches send and how they read the answers: request bodies, samples per
// request, their summaries and the dense city's page checks.
import { mulberry32 } from '@pcp/testing/prng';
import { round2 } from '../../helpers.js';
import {
  loadRow,
  latencySummary,
  pacedLoad,
  type LoadResult,
  type LoadTarget,
} from '../../load/paced-load.js';
import type { Row } from '../../report.js';
import type { Coordinates } from './stores.js';

export const PAGE_LIMIT = 20;
/** The dense city's centre: Chicago's Loop (ZIP 60603). */
export const DENSE_CENTER = { latitude: 41.8806, longitude: -87.6278 };
export const DENSE_PLACE = { city: 'Chicago', state: 'IL', zip: '60603' };
/** Customers of the dense city: the centre itself and points up to this far from it. */
export const DENSE_CUSTOMER_METERS = 2_000;

export interface Body {
  kind: 'scheduled' | 'asap';
  payload: Buffer;
}

export interface Sample {
  kind: Body['kind'];
  index: number;
  latency: number;
  status?: number;
  stores?: number;
  totalCount?: number;
  hasMore?: boolean;
  bytes?: number;
}

export type Summary = ReturnType<typeof summarize>;

/** Tomorrow 20:00 UTC: inside 08:00–22:00 in every continental US time zone. */
export function scheduledInstant(): string {
  const at = new Date();
  at.setUTCDate(at.getUTCDate() + 1);
  at.setUTCHours(20, 0, 0, 0);
  return at.toISOString();
}

/** Request bodies rotating over the locations, alternating PICKUP / DELIVERY_BY_MERCHANT. */
export function requestBodies(
  locations: Coordinates[],
  { scheduledShare = 0, limit = PAGE_LIMIT } = {},
): Body[] {
  const random = mulberry32(0xb0d1e5);
  const scheduledTime = scheduledInstant();
  return locations.map((location, i) => {
    const scheduled = random() < scheduledShare;
    const body = {
      location,
      fulfillmentType: i % 2 === 0 ? 'PICKUP' : 'DELIVERY_BY_MERCHANT',
      limit,
      ...(scheduled ? { scheduledTime } : {}),
    };
    return { kind: scheduled ? 'scheduled' : 'asap', payload: Buffer.from(JSON.stringify(body)) };
  });
}

/** Latency and response figures of some of a run's samples. */
export function summarize(samples: Sample[], achievedRate: number | string = '') {
  const ok = samples.filter((s) => s.stores !== undefined);
  const mean = (values: number[]) =>
    values.length ? round2(values.reduce((a, b) => a + b, 0) / values.length) : NaN;
  return {
    requests: samples.length,
    achievedRate: achievedRate as number,
    ...latencySummary(samples.map((s) => s.latency)),
    non2xx: samples.filter((s) => s.status !== undefined && (s.status < 200 || s.status >= 300))
      .length,
    errors: samples.filter((s) => s.status === undefined).length,
    avgStores: mean(ok.map((s) => s.stores!)),
    avgTotalCount: mean(ok.map((s) => s.totalCount!)),
  };
}

export function row(
  label: string,
  rate: number | string,
  s: Partial<LoadResult> & { avgStores: number | string; avgTotalCount: number | string },
): Row {
  return {
    run: label,
    ...loadRow(rate, s),
    'avg stores': s.avgStores,
    'avg totalCount': s.avgTotalCount,
  };
}

/**
 * What is wrong with the dense city's answers: a page longer than its limit or than the
 * stores matching, `hasMore` disagreeing with them, or a pickup answer not counting every
 * dense store (all are within the pickup radius of every customer point).
 */
export function pageProblems(samples: Sample[], limit: number, denseCount: number): string[] {
  const problems = [];
  for (const s of samples) {
    if (s.stores === undefined || s.totalCount === undefined) continue; // counted in the table
    const pickup = s.index % 2 === 0;
    const expected = Math.min(limit, s.totalCount);
    if (s.stores !== expected) {
      problems.push(`a page of ${s.stores} stores (limit ${limit}, totalCount ${s.totalCount})`);
    }
    if (s.hasMore !== s.totalCount > s.stores) {
      problems.push(`hasMore ${s.hasMore} with ${s.stores} of ${s.totalCount} stores`);
    }
    if (pickup && s.totalCount < denseCount) {
      problems.push(`a pickup answer counting ${s.totalCount} stores, fewer than ${denseCount}`);
    }
  }
  return problems;
}

/**
 * Paced load with rotating bodies, keeping a sample per request (its body's kind and index,
 * latency, status and the stores it found) to summarize by kind and fulfillment type.
 * `failed` hears of the first failed response.
 */
export async function pacedDiscover(
  target: LoadTarget,
  bodies: Body[],
  rate: number,
  seconds: number,
  failed: (firstFailure: string) => void,
) {
  const samples: Sample[] = [];
  const result = await pacedLoad({
    ...target,
    bodies: bodies.map((b) => b.payload),
    rate,
    seconds,
    onResult: ({ index: sent, latency, status, body }) => {
      const index = sent % bodies.length;
      const sample: Sample = { kind: bodies[index]!.kind, index, latency, status };
      if (status !== undefined && status >= 200 && status < 300) {
        try {
          const found = JSON.parse(body ?? '') as {
            stores: unknown[];
            totalCount: number;
            hasMore: boolean;
          };
          sample.stores = found.stores.length;
          sample.totalCount = found.totalCount;
          sample.hasMore = found.hasMore;
          sample.bytes = Buffer.byteLength(body ?? '');
        } catch {
          // counted in the latency table; the averages skip it
        }
      }
      samples.push(sample);
    },
  });
  if (result.firstFailure !== undefined) failed(result.firstFailure);
  return { samples, achievedRate: result.achievedRate };
}
