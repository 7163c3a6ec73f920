// `npm run bench:stores`: store lookups through gateway → NATS → stores → Postgres at fixed
// request rates, with the platform running as separate processes on an isolated database,
// subject prefix and Redis key prefix. Prints p50/p90/p99 latency and throughput per rate,
// with the CPU each process used.
// Options: BENCH_RATES=200,500,1000 BENCH_SECONDS=15 BENCH_CONNECTIONS=32
import { BenchPlatform, printTable } from './lib/bench-platform.mjs';
import { pacedLoad, peakLoad } from './lib/paced-load.mjs';
import { cpuLoadRow, cpuMeter } from './lib/process-cpu.mjs';
import { log } from './lib/setup.mjs';

const rates = (process.env.BENCH_RATES ?? '200,500,1000').split(',').map(Number);
const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const port = Number(process.env.BENCH_PORT ?? 18080);

const platform = await BenchPlatform.create({ port });
const withCpu = cpuMeter(platform);
const platformCpu = ['gateway', 'stores', 'nats', 'postgres'];

await platform.run(async () => {
  const { commerce, distribution } = platform.createPartners();
  platform.setRateLimits(distribution, { reads: 1_000_000 });
  const storeId = await platform.createStore(commerce.apiKey);
  const target = {
    url: platform.url(`/v1/marketfront/stores/${storeId}`),
    headers: { authorization: `Bearer ${distribution.apiKey}` },
  };
  log('warming up');
  await pacedLoad({ ...target, rate: 500, seconds: 5 });

  const rows = [];
  for (const rate of rates) {
    log(`${rate} req/s for ${seconds}s (open loop, evenly spaced)`);
    const result = await withCpu(platformCpu, () => pacedLoad({ ...target, rate, seconds }));
    rows.push(cpuLoadRow(`at ${rate}/s`, rate, result));
  }
  log(`unthrottled for ${seconds}s with ${connections} connections (peak throughput)`);
  const peak = await withCpu(platformCpu, () => peakLoad({ ...target, connections, seconds }));
  rows.push(cpuLoadRow(`unthrottled (${connections} connections)`, 'max', peak));
  printTable('GET /v1/marketfront/stores/{id}: gateway → NATS → stores → Postgres', rows);
});
