// Open-loop load at a fixed rate: requests leave evenly spaced whether or not earlier ones
// have answered, and latency is measured from each request's scheduled send time, so a
// stall shows up in the percentiles instead of slowing the generator (no coordinated
// omission). autocannon's overallRate sends per-second bursts, which distorts them.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/**
 * @param {{ url: string, headers?: Record<string,string>, rate: number, seconds: number, maxSockets?: number }} options
 */
export async function pacedLoad({ url, headers = {}, rate, seconds, maxSockets = 256 }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const total = Math.round(rate * seconds);
  const intervalMs = 1000 / rate;
  const latencies = [];
  let errors = 0;
  let non2xx = 0;
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
        const scheduledAt = started + sent * intervalMs;
        const request = http.get(url, { agent, headers }, (response) => {
          response.resume();
          response.on('end', () => {
            latencies.push(performance.now() - scheduledAt);
            if (response.statusCode < 200 || response.statusCode >= 300) non2xx++;
            complete();
          });
        });
        request.on('error', () => {
          errors++;
          complete();
        });
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  const elapsedSeconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const round = (value) => Math.round(value * 100) / 100;
  return {
    requests: total,
    achievedRate: Math.round(total / elapsedSeconds),
    p50: round(percentile(latencies, 50)),
    p90: round(percentile(latencies, 90)),
    p99: round(percentile(latencies, 99)),
    max: round(latencies.at(-1)),
    non2xx,
    errors,
  };
}
