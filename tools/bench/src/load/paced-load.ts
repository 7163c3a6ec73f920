// The one load generator of the benches. pacedLoad is open loop at a fixed rate: requests
// leave evenly spaced whether or not earlier ones have answered, and latency runs from each
// request's scheduled send time, so a stall shows in the percentiles instead of slowing the
// generator (no coordinated omission; autocannon's overallRate sends per-second bursts).
// peakLoad is closed loop (autocannon) for the peak throughput.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { round2 } from '../helpers.js';
import { tsWorker } from '../ts-modules.js';
import type { PacedLoadOutcome, PacedLoadWork, RequestResult } from './paced-load.worker.js';

const percentile = (sorted: ArrayLike<number>, p: number) =>
  sorted.length === 0
    ? NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** p50, p90, p99 and max of latencies in ms, to 0.01 ms (NaN without any). */
export function latencySummary(latencies: Iterable<number>): LatencySummary {
  const sorted = Float64Array.from(latencies).sort();
  return {
    p50: round2(percentile(sorted, 50)),
    p90: round2(percentile(sorted, 90)),
    p99: round2(percentile(sorted, 99)),
    max: round2(sorted.at(-1) ?? NaN),
  };
}

export interface LoadTarget {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** One body for every request, or `bodies` in turn (request i gets bodies[i % length]). */
  body?: string | Buffer;
  bodies?: (string | Buffer)[];
  /** A fresh `randomUUID()` in this header on each request (an Idempotency-Key). */
  keyHeader?: string;
  /** Paths of `url`'s origin in turn (request i gets paths[i % length]); `url`'s own if none. */
  paths?: string[];
}

export interface LoadResult extends LatencySummary {
  requests: number;
  achievedRate: number;
  non2xx: number;
  errors: number;
  /** The first non-2xx response or error. */
  firstFailure?: string;
}

/**
 * Paced load, in a worker thread with a heap of its own, so the benchmark's garbage
 * collections (over catalogs and samples of many MB) do not stall sends or receipts and land
 * in the percentiles. `onResult` sees every request after the run, with its response body
 * (`status` and `body` undefined after a connection error).
 */
export async function pacedLoad({
  onResult,
  body,
  bodies,
  ...options
}: LoadTarget & {
  rate: number;
  seconds: number;
  maxSockets?: number;
  onResult?: (result: RequestResult) => void;
}): Promise<LoadResult> {
  const work: PacedLoadWork = {
    ...options,
    paths: options.paths ?? [],
    bodies: bodies ?? (body === undefined ? [] : [body]),
    keepResults: onResult !== undefined,
  };
  const worker = tsWorker(new URL('./paced-load.worker.ts', import.meta.url), {
    workerData: work,
  });
  const outcome = await new Promise<PacedLoadOutcome>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`load worker exited (code ${code})`)));
  });
  await worker.terminate();
  const { latencies, results, ...counts } = outcome;
  for (const result of results ?? []) onResult?.(result);
  return { ...counts, ...latencySummary(latencies) };
}

/**
 * Unthrottled load for peak throughput (autocannon, `connections` requests always in
 * flight; closed loop, so only its throughput compares with pacedLoad's).
 */
export async function peakLoad({
  url,
  method = 'GET',
  headers = {},
  body,
  bodies = body === undefined ? [] : [body],
  keyHeader,
  paths = [],
  connections,
  seconds,
}: LoadTarget & { connections: number; seconds: number }): Promise<LoadResult> {
  let next = 0;
  let nextPath = 0;
  const requestHeaders =
    bodies.length === 0 ? headers : { 'content-type': 'application/json', ...headers };
  const setupRequest = (request: autocannon.Request) => ({
    ...request,
    ...(bodies.length === 0 ? {} : { body: bodies[next++ % bodies.length] }),
    ...(paths.length === 0 ? {} : { path: paths[nextPath++ % paths.length] }),
    ...(keyHeader === undefined
      ? {}
      : { headers: { ...request.headers, [keyHeader]: randomUUID() } }),
  });
  let firstFailure: string | undefined;
  const onResponse = (status: number, responseBody: string) => {
    if (status < 200 || status >= 300) {
      firstFailure ??= `${url}: ${status} ${String(responseBody).slice(0, 500)}`;
    }
  };
  const dynamic = bodies.length > 0 || paths.length > 0 || keyHeader !== undefined;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    void autocannon(
      {
        url,
        method: method as autocannon.Request['method'],
        headers: requestHeaders,
        connections,
        duration: seconds,
        requests: [dynamic ? { setupRequest, onResponse } : { onResponse }],
      },
      (error: Error | null, outcome: autocannon.Result) =>
        error ? reject(error) : resolve(outcome),
    );
  });
  return {
    requests: result.requests.total,
    achievedRate: Math.round(result.requests.average),
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    firstFailure,
  };
}

/** A load result as console.table columns. */
export function loadRow(targetRate: number | string | undefined, result: Partial<LoadResult>) {
  return {
    'target req/s': targetRate,
    'achieved req/s': result.achievedRate,
    'p50 ms': result.p50,
    'p90 ms': result.p90,
    'p99 ms': result.p99,
    'max ms': result.max,
    requests: result.requests,
    'non-2xx': result.non2xx,
    errors: result.errors,
  };
}
