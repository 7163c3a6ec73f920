// Open-loop load at a fixed rate: requests leave evenly spaced whether or not earlier ones
// have answered, and latency is measured from each request's scheduled send time, so a
// stall shows up in the percentiles instead of slowing the generator (no coordinated
// omission). autocannon's overallRate sends per-second bursts, which distorts them.
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';

export const round2 = (value) => Math.round(value * 100) / 100;

const percentile = (sorted, p) =>
  sorted.length === 0
    ? NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** p50, p90, p99 and max of latencies in ms, to 0.01 ms (NaN without any). */
export function latencySummary(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    p50: round2(percentile(sorted, 50)),
    p90: round2(percentile(sorted, 90)),
    p99: round2(percentile(sorted, 99)),
    max: round2(sorted.at(-1) ?? NaN),
  };
}

/**
 * Requests go with `body`, or with `bodies` in turn (request i gets bodies[i % length]).
 * The loop runs in a worker thread with a heap of its own, so the benchmark's garbage
 * collections (over catalogs and samples of many MB) do not stall sends or receipts and
 * land in the percentiles: in the same thread they added 15-30 ms stalls twice a second. `onResult` then sees every request (after the run,
 * in completion order) with its response body; `status` and `body` are undefined after a
 * connection error. `firstFailure` describes the first non-2xx response or error. With
 * `keyHeader`, each request carries a fresh `randomUUID()` in that header (an
 * Idempotency-Key per request).
 * @param {{
 *   url: string, method?: string, headers?: Record<string,string>,
 *   body?: string | Buffer, bodies?: (string | Buffer)[], keyHeader?: string,
 *   rate: number, seconds: number, maxSockets?: number,
 *   onResult?: (result: { index: number, latency: number, status?: number, body?: string }) => void,
 * }} options
 */
export async function pacedLoad({ onResult, body, bodies, ...options }) {
  const worker = new Worker(new URL('./paced-load-worker.mjs', import.meta.url), {
    workerData: {
      ...options,
      bodies: bodies ?? (body === undefined ? [] : [body]),
      keepResults: onResult !== undefined,
    },
  });
  const outcome = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`load worker exited (code ${code})`)));
  });
  await worker.terminate();
  const { latencies, results, ...counts } = outcome;
  for (const result of results ?? []) onResult(result);
  return { ...counts, ...latencySummary(latencies) };
}

/**
 * Unthrottled load for peak throughput (autocannon, `connections` requests always in
 * flight; closed loop, so only its throughput compares with pacedLoad's). Options and
 * result as pacedLoad's, without the pacing.
 * @param {{
 *   url: string, method?: string, headers?: Record<string,string>,
 *   body?: string | Buffer, bodies?: (string | Buffer)[], keyHeader?: string,
 *   connections: number, seconds: number,
 * }} options
 */
export async function peakLoad({
  url,
  method = 'GET',
  headers = {},
  body,
  bodies = body === undefined ? [] : [body],
  keyHeader,
  connections,
  seconds,
}) {
  const { default: autocannon } = await import('autocannon');
  let next = 0;
  const requestHeaders =
    bodies.length === 0 ? headers : { 'content-type': 'application/json', ...headers };
  const setupRequest = (request) => ({
    ...request,
    ...(bodies.length === 0 ? {} : { body: bodies[next++ % bodies.length] }),
    ...(keyHeader === undefined
      ? {}
      : { headers: { ...request.headers, [keyHeader]: randomUUID() } }),
  });
  let firstFailure;
  const onResponse = (status, responseBody) => {
    if (status < 200 || status >= 300) {
      firstFailure ??= `${url}: ${status} ${String(responseBody).slice(0, 500)}`;
    }
  };
  const dynamic = bodies.length > 0 || keyHeader !== undefined;
  const options = {
    url,
    method,
    headers: requestHeaders,
    connections,
    duration: seconds,
    requests: [dynamic ? { setupRequest, onResponse } : { onResponse }],
  };
  const result = await new Promise((resolve, reject) => {
    autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
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

/** A pacedLoad or peakLoad result as console.table columns. */
export function loadRow(targetRate, result) {
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
