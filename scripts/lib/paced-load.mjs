// Open-loop load at a fixed rate: requests leave evenly spaced whether or not earlier ones
// have answered, and latency is measured from each request's scheduled send time, so a
// stall shows up in the percentiles instead of slowing the generator (no coordinated
// omission). autocannon's overallRate sends per-second bursts, which distorts them.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

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

/** A `body` function rotating over pre-serialized bodies, one per request. */
export const rotating = (bodies) => (index) => bodies[index % bodies.length];

/**
 * `body` (JSON; a function of the request index for rotating bodies) goes with every
 * request. `onResult` sees every request as it completes, with the response body read for
 * it; `status` and `body` are undefined after a connection error. `firstFailure` describes
 * the first non-2xx response or error.
 * @param {{
 *   url: string, method?: string, headers?: Record<string,string>,
 *   body?: string | Buffer | ((index: number) => string | Buffer),
 *   rate: number, seconds: number, maxSockets?: number,
 *   onResult?: (result: { index: number, latency: number, status?: number, body?: string }) => void,
 * }} options
 */
export async function pacedLoad({
  url,
  method = 'GET',
  headers = {},
  body,
  rate,
  seconds,
  maxSockets = 256,
  onResult,
}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const bodyAt = typeof body === 'function' ? body : () => body;
  const total = Math.round(rate * seconds);
  const intervalMs = 1000 / rate;
  const latencies = [];
  let errors = 0;
  let non2xx = 0;
  let firstFailure;
  let finished = 0;
  const started = performance.now();
  await new Promise((resolve) => {
    let sent = 0;
    const complete = () => {
      if (++finished === total) resolve();
    };
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - started) / intervalMs) + 1);
      for (; sent < due; sent++) {
        const index = sent;
        const scheduledAt = started + index * intervalMs;
        const payload = bodyAt(index);
        const requestHeaders =
          payload === undefined
            ? headers
            : {
                'content-type': 'application/json',
                ...headers,
                'content-length': Buffer.byteLength(payload),
              };
        const request = http.request(
          url,
          { method, agent, headers: requestHeaders },
          (response) => {
            const ok = response.statusCode >= 200 && response.statusCode < 300;
            // Read a body only where it is looked at: a failure's, or every one for onResult.
            const chunks = [];
            if (ok && !onResult) response.resume();
            else response.on('data', (chunk) => chunks.push(chunk));
            response.on('end', () => {
              const latency = performance.now() - scheduledAt;
              latencies.push(latency);
              const text = Buffer.concat(chunks).toString('utf8');
              if (!ok) {
                non2xx++;
                firstFailure ??= `${url}: ${response.statusCode} ${text.slice(0, 500)}`;
              }
              onResult?.({ index, latency, status: response.statusCode, body: text });
              complete();
            });
          },
        );
        request.on('error', (error) => {
          errors++;
          firstFailure ??= `${url}: ${error}`;
          onResult?.({ index, latency: performance.now() - scheduledAt });
          complete();
        });
        request.end(payload);
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  const elapsedSeconds = (performance.now() - started) / 1000;
  agent.destroy();
  return {
    requests: total,
    achievedRate: Math.round(total / elapsedSeconds),
    ...latencySummary(latencies),
    non2xx,
    errors,
    firstFailure,
  };
}

/**
 * Unthrottled load for peak throughput (autocannon, `connections` requests always in
 * flight; closed loop, so only its throughput compares with pacedLoad's). Options and
 * result as pacedLoad's, without the pacing.
 * @param {{
 *   url: string, method?: string, headers?: Record<string,string>,
 *   body?: string | Buffer | ((index: number) => string | Buffer),
 *   connections: number, seconds: number,
 * }} options
 */
export async function peakLoad({ url, method = 'GET', headers = {}, body, connections, seconds }) {
  const { default: autocannon } = await import('autocannon');
  const bodyAt = typeof body === 'function' ? body : () => body;
  let next = 0;
  const options = {
    url,
    method,
    headers,
    connections,
    duration: seconds,
    ...(body === undefined
      ? {}
      : {
          headers: { 'content-type': 'application/json', ...headers },
          requests: [{ setupRequest: (request) => ({ ...request, body: bodyAt(next++) }) }],
        }),
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
