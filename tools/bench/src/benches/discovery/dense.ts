// Discovery in a dense city (`npm run bench -- discovery-dense`): BENCH_DENSE_STORES (1,000)
// stores within BENCH_DENSE_RADIUS_KM (25) of Chicago's Loop among BENCH_STORES (100k) around
// US ZIP centroids, discovered by customers up to 2 km from the centre, pages of 20. Paced at
// BENCH_RATE (200) req/s for the tail, then unthrottled with BENCH_CONNECTIONS (50) for the
// throughput, with the CPU each process spent per request (Postgres: the stores service's
// backends, so other work on a shared server is not counted). Goal: >= 400 req/s.
import { mulberry32 } from '@pcp/testing/prng';
import { fail, log } from '@pcp/setup';
import { envNumber, round2 } from '../../helpers.js';
import { peakLoad } from '../../load/paced-load.js';
import { BenchPlatform } from '../../platform/bench-platform.js';
import { clockTicks, cpuTicks } from '../../platform/proc.js';
import { Report, type Row } from '../../report.js';
import { explainDiscovery } from './explain.js';
import {
  DENSE_CENTER,
  DENSE_CUSTOMER_METERS,
  DENSE_PLACE,
  PAGE_LIMIT,
  pacedDiscover,
  pageProblems,
  requestBodies,
  row,
  summarize,
} from './requests.js';
import { denseStoreValues, pointInDisc, seedStores } from './stores.js';

const TARGET_PEAK = 400;
const CUSTOMERS = 300;

export async function run(): Promise<void> {
  const storeCount = envNumber('BENCH_STORES', 100_000);
  const denseCount = envNumber('BENCH_DENSE_STORES', 1_000);
  const denseRadiusMeters = envNumber('BENCH_DENSE_RADIUS_KM', 25) * 1_000;
  const seconds = envNumber('BENCH_SECONDS', 20);
  const rate = envNumber('BENCH_RATE', 200);
  const connections = envNumber('BENCH_CONNECTIONS', 50);
  const port = envNumber('BENCH_PORT', 18082);
  if (!Number.isInteger(storeCount) || storeCount < 0 || !Number.isInteger(denseCount)) {
    fail(new Error('BENCH_STORES and BENCH_DENSE_STORES must be integers >= 0'));
  }
  if (!(denseCount > 0 && denseRadiusMeters > 0 && seconds > 0 && rate > 0)) {
    fail(new Error('BENCH_DENSE_STORES, BENCH_DENSE_RADIUS_KM, BENCH_SECONDS, BENCH_RATE > 0'));
  }

  const platform = await BenchPlatform.create({ port });
  const report = new Report();
  let firstFailure: string | undefined;
  const failed = (failure: string) => (firstFailure ??= failure);

  /** CPU ticks of the gateway, the stores service and its Postgres backends. */
  async function ticks(): Promise<Map<string, Map<number, number>>> {
    const client = await platform.connectDatabase();
    try {
      const { rows } = await client.query<{ pid: number }>(
        "select pid from pg_stat_activity where datname = current_database() and application_name = 'stores'",
      );
      const of = (pids: number[]) => new Map(pids.map((pid) => [pid, cpuTicks(pid)]));
      return new Map([
        ['gateway', of(platform.pidsOf('gateway'))],
        ['stores', of(platform.pidsOf('stores'))],
        ['postgres (stores backends)', of(rows.map((r) => r.pid))],
      ]);
    } finally {
      await client.end();
    }
  }
  /** CPU ms per request of each process between two `ticks()`, and this process's own. */
  function perRequest(
    before: Map<string, Map<number, number>>,
    after: Map<string, Map<number, number>>,
    requests: number,
    benchMicros: number,
  ): Row {
    const columns: Row = {};
    let total = 0;
    for (const [name, pids] of after) {
      let used = 0;
      for (const [pid, now] of pids) {
        // A backend the pool opened meanwhile spent all its ticks in this run.
        const then = before.get(name)?.get(pid) ?? 0;
        if (Number.isFinite(now) && Number.isFinite(then)) used += now - then;
      }
      const ms = (1000 * used) / clockTicks / requests;
      total += ms;
      columns[`${name} CPU ms/req`] = round2(ms);
    }
    const bench = benchMicros / 1000 / requests;
    columns['bench CPU ms/req'] = round2(bench);
    columns['sum CPU ms/req'] = round2(total + bench);
    return columns;
  }

  await platform.run(
    async () => {
      const { commerce, distribution } = platform.createPartners();
      platform.setRateLimits(distribution, { discovery: 1_000_000 });
      const target = {
        url: platform.url('/v1/marketfront/stores/discover'),
        method: 'POST',
        headers: { authorization: `Bearer ${distribution.apiKey}` },
      };
      if (storeCount > 0) {
        log(`seeding ${storeCount} stores around US ZIP centroids`);
        await seedStores(platform, commerce.partnerId, storeCount);
      }
      const radiusKm = round2(denseRadiusMeters / 1_000);
      log(`seeding ${denseCount} stores within ${radiusKm} km of Chicago's Loop`);
      const values = denseStoreValues(DENSE_CENTER, DENSE_PLACE, denseRadiusMeters);
      const { stored } = await seedStores(platform, commerce.partnerId, denseCount, values, 0xc17e);
      if (stored !== storeCount + denseCount) {
        throw new Error(`seeded ${stored} stores in all, expected ${storeCount + denseCount}`);
      }
      const random = mulberry32(0xd3a5e);
      const customers = [
        DENSE_CENTER,
        ...Array.from({ length: CUSTOMERS - 1 }, () =>
          pointInDisc(random, DENSE_CENTER, DENSE_CUSTOMER_METERS),
        ),
      ];
      const bodies = requestBodies(customers);
      log('warming up: 100 req/s for 5 s');
      await pacedDiscover(target, bodies, 100, 5, failed);

      const rows: Row[] = [];
      const problems: string[] = [];
      log(`${rate} req/s for ${seconds} s`);
      let before = await ticks();
      let benchBefore = process.cpuUsage();
      const paced = await pacedDiscover(target, bodies, rate, seconds, failed);
      let benchUsed = process.cpuUsage(benchBefore);
      problems.push(...pageProblems(paced.samples, PAGE_LIMIT, denseCount));
      const pacedSummary = summarize(paced.samples, paced.achievedRate);
      rows.push({
        ...row('paced, mixed PICKUP/DELIVERY', rate, pacedSummary),
        ...perRequest(
          before,
          await ticks(),
          paced.samples.length,
          benchUsed.user + benchUsed.system,
        ),
      });
      for (const type of ['PICKUP', 'DELIVERY_BY_MERCHANT']) {
        const subset = paced.samples.filter((s) => s.index % 2 === (type === 'PICKUP' ? 0 : 1));
        rows.push(row(`  ${type} only`, rate, summarize(subset)));
      }

      log(`unthrottled for ${seconds} s with ${connections} connections`);
      before = await ticks();
      benchBefore = process.cpuUsage();
      const peak = await peakLoad({
        ...target,
        bodies: bodies.map((b) => b.payload),
        connections,
        seconds,
      });
      benchUsed = process.cpuUsage(benchBefore);
      if (peak.firstFailure !== undefined) failed(peak.firstFailure);
      rows.push({
        ...row(`unthrottled (${connections} connections)`, 'max', {
          ...peak,
          avgStores: '',
          avgTotalCount: '',
        }),
        ...perRequest(before, await ticks(), peak.requests, benchUsed.user + benchUsed.system),
      });
      report.table(
        `Dense city: ${denseCount} stores within ${radiusKm} km of Chicago's Loop among ` +
          `${stored} stores, discovered up to ${DENSE_CUSTOMER_METERS / 1_000} km from it ` +
          `(limit ${PAGE_LIMIT}): gateway → NATS → stores → Postgres`,
        rows,
      );
      if (problems.length > 0 || peak.non2xx > 0 || peak.errors > 0) process.exitCode = 1;
      report.verdicts = [
        `dense city unthrottled (${connections} connections) >= ${TARGET_PEAK} req/s: ` +
          `${peak.achievedRate >= TARGET_PEAK ? 'met' : 'not met'} (${peak.achievedRate} req/s)`,
        `dense city pages bounded (each answer one page of at most its limit, pickup counting ` +
          `all ${denseCount}): ${problems.length === 0 ? 'OK' : `FAILED (${problems.length} answers)`}`,
        ...problems.slice(0, 5).map((problem) => `  ${problem}`),
      ];
      if (firstFailure) log(`first failed response: ${firstFailure}`);
      report.print();
      if (process.env.BENCH_EXPLAIN === '1')
        await explainDiscovery(platform, DENSE_CENTER, PAGE_LIMIT);
    },
    () => {
      report.print();
      if (firstFailure) log(`first failed response: ${firstFailure}`);
    },
  );
}
