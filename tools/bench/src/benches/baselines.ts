// What this machine can do at all, for the umbrella run to state every other figure as a
// ratio of: bare Fastify and the floor (Fastify → NATS → fixed reply), each in a child
// process, and the NestJS peer (the store GET as a typical NestJS app over the same NATS
// hop); paced at fixed rates, then unthrottled for the peak, with the CPU each used.
import { fail, log, serverUrls } from '@pcp/setup';
import { startBaseline, startFloor } from '../floors/floor.js';
import { PEER_STORES, startNestPeer } from '../floors/nest-peer/peer.js';
import { envNumber, envNumbers } from '../helpers.js';
import { cpuLoadRow, cpuMeter } from '../load/cpu.js';
import { pacedLoad, peakLoad } from '../load/paced-load.js';
import { BenchPlatform } from '../platform/bench-platform.js';
import { recordResult, Report, type Row } from '../report.js';

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

export async function run(): Promise<void> {
  const rates = envNumbers('BENCH_RATES', '500,1000,1500');
  const seconds = envNumber('BENCH_SECONDS', 10);
  const connections = envNumber('BENCH_CONNECTIONS', 32);
  // The baselines listen on free ports: BENCH_PORT only places the (unused) platform.
  const port = envNumber('BENCH_PORT', 18123);
  if (rates.some((rate) => !(rate > 0)) || !(seconds > 0) || !Number.isInteger(connections)) {
    fail(new Error('BENCH_RATES must be positive numbers, BENCH_SECONDS positive'));
  }
  // The database holds the NestJS peer's table.
  const platform = await BenchPlatform.create({ port, services: false, database: true });
  const withCpu = cpuMeter(platform);
  const report = new Report();

  await platform.run(
    async () => {
      const post = { method: 'POST', body: REQUEST_BODY };
      const fixed = `a ${REQUEST_BODY.length}-byte JSON POST, fixed ${Buffer.byteLength(RESPONSE_BODY)}-byte JSON answer`;
      const peer = await startNestPeer(platform, {
        databaseUrl: platform.databaseUrl.toString(),
        natsUrl: serverUrls.nats,
        prefix: platform.subjectPrefix,
      });
      const baselines = [
        {
          key: 'bare',
          label: 'bare Fastify',
          title: `bare Fastify: ${fixed}`,
          load: { ...post, url: `${await startBaseline(platform, RESPONSE_BODY)}/baseline` },
          cpu: ['fastify'],
        },
        {
          key: 'floor',
          label: 'floor (Fastify → NATS → fixed reply)',
          title: `floor (Fastify → NATS → fixed reply): ${fixed}`,
          load: { ...post, url: `${await startFloor(platform, RESPONSE_BODY)}/baseline` },
          cpu: ['forwarder', 'responder', 'nats'],
        },
        {
          key: 'nest',
          label: 'NestJS peer',
          title:
            'NestJS peer: GET /stores/{id}, Nest (Express) with a class-validator DTO → NATS → ' +
            `Nest microservice with a class-validator DTO → Postgres (one of ${PEER_STORES} rows by id)`,
          load: { url: `${peer.url}/stores/${peer.storeId}` },
          cpu: ['nest-http', 'nest-stores', 'nats', 'postgres'],
        },
      ];
      const peaks: Record<string, number> = {};
      for (const baseline of baselines) {
        const { load } = baseline;
        log(`${baseline.label}: warming up at ${WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
        await pacedLoad({ ...load, rate: WARMUP_RATE, seconds: WARMUP_SECONDS });
        const rows: Row[] = [];
        for (const rate of rates) {
          log(`${baseline.label}: ${rate} req/s for ${seconds} s`);
          const result = await withCpu(baseline.cpu, () => pacedLoad({ ...load, rate, seconds }));
          rows.push(cpuLoadRow(`${baseline.label} at ${rate}/s`, rate, result));
        }
        log(`${baseline.label}: unthrottled for ${seconds} s with ${connections} connections`);
        const peak = await withCpu(baseline.cpu, () => peakLoad({ ...load, connections, seconds }));
        rows.push(cpuLoadRow(`${baseline.label} unthrottled (${connections} conns)`, 'max', peak));
        peaks[baseline.key] = peak.achievedRate;
        report.table(baseline.title, rows);
      }
      // What the umbrella run divides every peak by.
      recordResult({ kind: 'peaks', peaks });
      report.verdicts = [
        `peak: bare Fastify ${peaks.bare} req/s, floor ${peaks.floor} req/s, ` +
          `NestJS peer ${peaks.nest} req/s ` +
          `(${connections} connections, ${seconds} s each)`,
      ];
      report.print();
    },
    () => report.print(),
  );
}
