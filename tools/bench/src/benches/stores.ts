// Store lookups through gateway → NATS → stores → Postgres at fixed rates, then unthrottled.
import { cpuLoadRow, cpuMeter } from '../load/cpu.js';
import { pacedLoad, peakLoad } from '../load/paced-load.js';
import { BenchPlatform } from '../platform/bench-platform.js';
import { printTable, type Row } from '../report.js';
import { envNumber, envNumbers, log } from '../setup.js';

export async function run(): Promise<void> {
  const rates = envNumbers('BENCH_RATES', '200,500,1000');
  const seconds = envNumber('BENCH_SECONDS', 15);
  const connections = envNumber('BENCH_CONNECTIONS', 32);
  const port = envNumber('BENCH_PORT', 18080);

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

    const rows: Row[] = [];
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
}
