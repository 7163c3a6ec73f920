// The request loop of pacedLoad (paced-load.ts), in its own worker thread: requests leave
// evenly spaced, and each latency runs from its scheduled send time.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

export interface PacedLoadWork {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  bodies: (string | Buffer)[];
  /** Paths of `url`'s origin in turn; `url` itself if none. */
  paths: string[];
  rate: number;
  seconds: number;
  maxSockets?: number;
  keyHeader?: string;
  keepResults: boolean;
}

export interface RequestResult {
  index: number;
  latency: number;
  status?: number;
  body?: string;
}

export interface PacedLoadOutcome {
  requests: number;
  achievedRate: number;
  latencies: Float64Array;
  results?: RequestResult[];
  non2xx: number;
  errors: number;
  firstFailure?: string;
}

function run({
  url,
  method = 'GET',
  headers = {},
  bodies,
  paths,
  rate,
  seconds,
  maxSockets = 256,
  keyHeader,
  keepResults,
}: PacedLoadWork): Promise<PacedLoadOutcome> {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const total = Math.round(rate * seconds);
  const intervalMs = 1000 / rate;
  // Preallocated, so the loop itself adds little garbage.
  const latencies = new Float64Array(total);
  const results: RequestResult[] | undefined = keepResults ? [] : undefined;
  const requestHeaders = bodies.map((body) => ({
    'content-type': 'application/json',
    ...headers,
    'content-length': String(Buffer.byteLength(body)),
  }));
  const urls = paths.map((path) => new URL(path, url));
  let completed = 0;
  let errors = 0;
  let non2xx = 0;
  let firstFailure: string | undefined;
  const started = performance.now();
  return new Promise((resolve) => {
    let sent = 0;
    const complete = (latency: number) => {
      latencies[completed] = latency;
      if (++completed === total) {
        const elapsedSeconds = (performance.now() - started) / 1000;
        agent.destroy();
        resolve({
          requests: total,
          achievedRate: Math.round(total / elapsedSeconds),
          latencies,
          results,
          non2xx,
          errors,
          firstFailure,
        });
      }
    };
    const send = (index: number) => {
      const scheduledAt = started + index * intervalMs;
      const which = bodies.length === 0 ? -1 : index % bodies.length;
      const sharedHeaders = which < 0 ? headers : requestHeaders[which];
      const request = http.request(
        urls.length === 0 ? url : urls[index % urls.length]!,
        {
          method,
          agent,
          headers:
            keyHeader === undefined
              ? sharedHeaders
              : { ...sharedHeaders, [keyHeader]: randomUUID() },
        },
        (response) => {
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          // Read a body only where it is looked at: a failure's, or every one for onResult.
          const chunks: Buffer[] = [];
          if (ok && !keepResults) response.resume();
          else response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const latency = performance.now() - scheduledAt;
            const text = chunks.length > 0 ? Buffer.concat(chunks).toString('utf8') : '';
            if (!ok) {
              non2xx++;
              firstFailure ??= `${url}: ${status} ${text.slice(0, 500)}`;
            }
            results?.push({ index, latency, status, body: text });
            complete(latency);
          });
        },
      );
      request.on('error', (error) => {
        const latency = performance.now() - scheduledAt;
        errors++;
        firstFailure ??= `${url}: ${String(error)}`;
        results?.push({ index, latency });
        complete(latency);
      });
      request.end(which < 0 ? undefined : bodies[which]);
    };
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - started) / intervalMs) + 1);
      for (; sent < due; sent++) send(sent);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
}

if (parentPort) parentPort.postMessage(await run(workerData as PacedLoadWork));
