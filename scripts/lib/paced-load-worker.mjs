// The request loop of pacedLoad (paced-load.mjs), in its own worker thread: requests leave
// evenly spaced, and each latency runs from its scheduled send time.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

const {
  url,
  method = 'GET',
  headers = {},
  bodies,
  rate,
  seconds,
  maxSockets = 256,
  keyHeader,
} = workerData;
const keepResults = workerData.keepResults;

const agent = new http.Agent({ keepAlive: true, maxSockets });
const total = Math.round(rate * seconds);
const intervalMs = 1000 / rate;
// Preallocated, so the loop itself adds little garbage.
const latencies = new Float64Array(total);
const results = keepResults ? [] : undefined;
const requestHeaders = bodies.map((body) => ({
  'content-type': 'application/json',
  ...headers,
  'content-length': Buffer.byteLength(body),
}));
let completed = 0;
let errors = 0;
let non2xx = 0;
let firstFailure;

const started = performance.now();
await new Promise((resolve) => {
  let sent = 0;
  const complete = (index, latency) => {
    latencies[completed] = latency;
    if (++completed === total) resolve();
  };
  const tick = () => {
    const due = Math.min(total, Math.floor((performance.now() - started) / intervalMs) + 1);
    for (; sent < due; sent++) {
      const index = sent;
      const scheduledAt = started + index * intervalMs;
      const which = bodies.length === 0 ? -1 : index % bodies.length;
      const sharedHeaders = which < 0 ? headers : requestHeaders[which];
      const request = http.request(
        url,
        {
          method,
          agent,
          // keyHeader: a fresh UUID in that header for each request (e.g. Idempotency-Key).
          headers:
            keyHeader === undefined
              ? sharedHeaders
              : { ...sharedHeaders, [keyHeader]: randomUUID() },
        },
        (response) => {
          const ok = response.statusCode >= 200 && response.statusCode < 300;
          // Read a body only where it is looked at: a failure's, or every one for onResult.
          const chunks = [];
          if (ok && !keepResults) response.resume();
          else response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => {
            const latency = performance.now() - scheduledAt;
            const text = chunks.length > 0 ? Buffer.concat(chunks).toString('utf8') : '';
            if (!ok) {
              non2xx++;
              firstFailure ??= `${url}: ${response.statusCode} ${text.slice(0, 500)}`;
            }
            results?.push({ index, latency, status: response.statusCode, body: text });
            complete(index, latency);
          });
        },
      );
      request.on('error', (error) => {
        const latency = performance.now() - scheduledAt;
        errors++;
        firstFailure ??= `${url}: ${error}`;
        results?.push({ index, latency });
        complete(index, latency);
      });
      request.end(which < 0 ? undefined : bodies[which]);
    }
    if (sent < total) setTimeout(tick, 1);
  };
  tick();
});
const elapsedSeconds = (performance.now() - started) / 1000;
agent.destroy();
parentPort.postMessage({
  requests: total,
  achievedRate: Math.round(total / elapsedSeconds),
  latencies,
  results,
  non2xx,
  errors,
  firstFailure,
});
