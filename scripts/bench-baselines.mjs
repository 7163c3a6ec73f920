// `node scripts/bench-baselines.mjs`: what this machine can do at all, for `npm run bench` to
// state every other figure as a ratio of: a bare Fastify route answering a fixed body, and
// the architecture's floor (Fastify passing the body over NATS to a responder answering a
// fixed body: the gateway → NATS → service I/O with none of the platform's work), each in a
// child process. Both take the same small JSON POST open loop at fixed rates (requests evenly
// spaced, latency from each one's scheduled send time), then unthrottled (autocannon) for the
// peak, with the CPU each process used. Options: BENCH_RATES=500,1000,1500 BENCH_SECONDS=10
// BENCH_CONNECTIONS=32 BENCH_PORT=18123 (unused ports: the baselines listen on free ones).
import { BenchPlatform, recordResult, Report } from './lib/bench-platform.mjs';
import { startBaseline, startFloor } from './lib/floor.mjs';
import { pacedLoad, peakLoad } from './lib/paced-load.mjs';
import { cpuLoadRow, cpuMeter } from './lib/process-cpu.mjs';
import { fail, log } from './lib/setup.mjs';

const rates = (process.env.BENCH_RATES ?? '500,1000,1500').split(',').map(Number);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const port = Number(process.env.BENCH_PORT ?? 18123);
if (rates.some((rate) => !(rate > 0)) || !(seconds > 0) || !Number.isInteger(connections)) {
  fail(new Error('BENCH_RATES must be positive numbers, BENCH_SECONDS positive'));
}
const WARMUP_RATE = 300;
const WARMUP_SECONDS = 3;
/** A small request, as a store lookup or cart call might send. */
const REQUEST_BODY = Buffer.from(
  JSON.stringify({
    storeId: '4f7c2a5e-0d8b-4c1e-9a6f-2b3d4e5f6a7b',
    quantity: 2,
    note: 'x'.repeat(64),
  }),
);
/** A ~1 KB JSON answer, fixed. */
const RESPONSE_BODY = JSON.stringify({
  storeId: '4f7c2a5e-0d8b-4c1e-9a6f-2b3d4e5f6a7b',
  name: 'Baseline Store',
  items: Array.from({ length: 12 }, (_, i) => ({ id: `item-${i}`, price: 4.99 + i, qty: 1 })),
  note: 'y'.repeat(256),
});

const platform = await BenchPlatform.create({ port, services: false });
const withCpu = cpuMeter(platform);
const report = new Report();

await platform.run(
  async () => {
    const baselines = [
      {
        key: 'bare',
        label: 'bare Fastify',
        url: `${await startBaseline(platform, RESPONSE_BODY)}/baseline`,
        cpu: ['fastify'],
      },
      {
        key: 'floor',
        label: 'floor (Fastify → NATS → fixed reply)',
        url: `${await startFloor(platform, RESPONSE_BODY)}/baseline`,
        cpu: ['forwarder', 'responder', 'nats'],
      },
    ];
    const peaks = {};
    for (const baseline of baselines) {
      const load = { url: baseline.url, method: 'POST', body: REQUEST_BODY };
      log(`${baseline.label}: warming up at ${WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
      await pacedLoad({ ...load, rate: WARMUP_RATE, seconds: WARMUP_SECONDS });
      const rows = [];
      for (const rate of rates) {
        log(`${baseline.label}: ${rate} req/s for ${seconds} s`);
        const result = await withCpu(baseline.cpu, () => pacedLoad({ ...load, rate, seconds }));
        rows.push(cpuLoadRow(`${baseline.label} at ${rate}/s`, rate, result));
      }
      log(`${baseline.label}: unthrottled for ${seconds} s with ${connections} connections`);
      const peak = await withCpu(baseline.cpu, () => peakLoad({ ...load, connections, seconds }));
      rows.push(cpuLoadRow(`${baseline.label} unthrottled (${connections} conns)`, 'max', peak));
      peaks[baseline.key] = peak.achievedRate;
      report.table(
        `${baseline.label}: a ${REQUEST_BODY.length}-byte JSON POST, fixed ${Buffer.byteLength(RESPONSE_BODY)}-byte JSON answer`,
        rows,
      );
    }
    // What scripts/bench.mjs divides every peak by.
    recordResult({ kind: 'peaks', peaks });
    report.verdicts = [
      `peak: bare Fastify ${peaks.bare} req/s, floor ${peaks.floor} req/s ` +
        `(${connections} connections, ${seconds} s each)`,
    ];
    report.print();
  },
  () => report.print(),
);
