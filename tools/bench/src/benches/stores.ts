// Store lookups through gateway → NATS → stores → Postgres at fixed rates, then unthrottled,
// over BENCH_STORES distinct stores (each request one of them in turn, never a single id).
import { log } from '@pcp/setup';
import { envNumber, envNumbers } from '../helpers.js';
import { cpuLoadRow, cpuMeter } from '../load/cpu.js';
import { pacedLoad, peakLoad } from '../load/paced-load.js';
import { BenchPlatform } from '../platform/bench-platform.js';
import { printTable, type Row } from '../report.js';
import { seedStores } from './discovery/stores.js';

export async function run(): Promise<void> {
  const rates = envNumbers('BENCH_RATES', '200,500,1000');
  const seconds = envNumber('BENCH_SECONDS', 15);
  const connections = envNumber('BENCH_CONNECTIONS', 32);
  const port = envNumber('BENCH_PORT', 18080);
  const storeCount = envNumber('BENCH_STORES', 10_000);

  const platform = await BenchPlatform.create({ port });
  const withCpu = cpuMeter(platform);
  const platformCpu = ['gateway', 'stores', 'nats', 'postgres'];

  await platform.run(async () => {
    const { commerce, distribution } = platform.createPartners();
    platform.setRateLimits(distribution, { reads: 1_000_000 });
    log(`seeding ${storeCount} stores`);
    await seedStores(platform, commerce.partnerId, storeCount);
    const client = await platform.connectDatabase({ options: '-c search_path=stores' });
    // Random order (the ids are random UUIDs), so neighbours in turn are not neighbours on disk.
    // The partner's own: the platform's fixture stores are there too.
    const { rows } = await client
      .query<{ store_id: string }>(
        'select store_id from stores where partner_id = $1 order by store_id',
        [commerce.partnerId],
      )
      .finally(() => client.end());
    if (rows.length !== storeCount) {
      throw new Error(`seeded ${rows.length} stores, expected ${storeCount}`);
    }
    const target = {
      url: platform.url('/'),
      paths: rows.map(({ store_id }) => `/v1/marketfront/stores/${store_id}`),
      headers: { authorization: `Bearer ${distribution.apiKey}` },
    };
    log('warming up');
    await pacedLoad({ ...target, rate: 500, seconds: 5 });

    const table: Row[] = [];
    for (const rate of rates) {
      log(`${rate} req/s for ${seconds}s (open loop, evenly spaced)`);
      const result = await withCpu(platformCpu, () => pacedLoad({ ...target, rate, seconds }));
      table.push(cpuLoadRow(`at ${rate}/s`, rate, result));
    }
    log(`unthrottled for ${seconds}s with ${connections} connections (peak throughput)`);
    const peak = await withCpu(platformCpu, () => peakLoad({ ...target, connections, seconds }));
    table.push(cpuLoadRow(`unthrottled (${connections} connections)`, 'max', peak));
    printTable(
      `GET /v1/marketfront/stores/{id} over ${storeCount} stores: gateway → NATS → stores → Postgres`,
      table,
    );
  });
}
