// `npm run bench:orders`: order validation through gateway → NATS → ordering (which asks the
// stores service for the store, its availability at the order time and delivery coverage,
// and prices the cart from its catalog cache), the platform's services as separate
// processes on an isolated database, subject prefix and Redis key prefix. A generated
// BENCH_ITEMS-item CatalogSet (modifierDepth 2, always open) is ingested and a valid 5-line
// cart with nested modifiers is built from it; validate runs open loop at fixed rates
// (requests evenly spaced, latency from each request's scheduled send time) for pickup and
// for delivery to an address, then unthrottled for the peak. In the same run the
// architecture's floor (Fastify → NATS → a responder answering the same validated order,
// fixed) takes the same load. Target: validate 1,000 req/s with p99 < 25 ms. Place and the
// replay of a placed key join this bench with place. Options: BENCH_SECONDS=15
// BENCH_PORT=18103 BENCH_ITEMS=2000, and BENCH_NODE_ARGS (Node flags for the services).
import { BenchPlatform, Report } from './lib/bench-platform.mjs';
import { buildLines, countLines, openAllWeek } from './lib/cart-builder.mjs';
import { generateCatalogSet } from './lib/catalog-generator.mjs';
import { startFloor } from './lib/floor.mjs';
import { pacedLoad, peakLoad, round2 } from './lib/paced-load.mjs';
import { cpuLoadRow, cpuMeter } from './lib/process-cpu.mjs';
import { fail, log } from './lib/setup.mjs';

const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const port = Number(process.env.BENCH_PORT ?? 18103);
const itemCount = Number(process.env.BENCH_ITEMS ?? 2_000);
if (!(seconds > 0) || !Number.isInteger(port) || !Number.isInteger(itemCount) || itemCount < 100) {
  fail(new Error('BENCH_SECONDS must be positive, BENCH_PORT an integer, BENCH_ITEMS >= 100'));
}
const RATES = [250, 500, 1_000];
const TARGET_RATE = 1_000;
const TARGET_P99_MS = 25;
const WARMUP_RATE = 200;
const WARMUP_SECONDS = 5;
const CART_LINES = 5;
const CONNECTIONS = 32;

const platform = await BenchPlatform.create({ port, serveDocuments: true });
const withCpu = cpuMeter(platform);
const report = new Report();

const row = cpuLoadRow;

await platform.run(
  async () => {
    const { commerce, distribution } = platform.createPartners();
    platform.setRateLimits(commerce, { writes: 100_000, reads: 100_000 });
    platform.setRateLimits(distribution, { reads: 1_000_000 });
    const everyDay = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
    const storeId = await platform.createStore(commerce.apiKey, 'Bench Orders Store', {
      availability: everyDay.map((dayOfWeek) => ({
        dayOfWeek,
        start: '00:00:00',
        end: '00:00:00',
      })),
    });

    log(`generating a ${itemCount}-item CatalogSet (modifierDepth 2), every catalog always open`);
    const doc = generateCatalogSet({ storeId, items: itemCount, seed: 2, modifierDepth: 2 });
    openAllWeek(doc);
    platform.documents.set('/catalogset.json', Buffer.from(JSON.stringify(doc)));
    const { seconds: ingestSeconds } = await platform.ingest(
      storeId,
      platform.documentUrl('/catalogset.json'),
      commerce.apiKey,
    );
    platform.documents.delete('/catalogset.json');
    log(`ingested in ${round2(ingestSeconds)} s`);

    const { lines } = buildLines(doc, CART_LINES);
    const cart = { catalogSetId: doc.catalogSetId, storeId, lineItems: lines };
    const client = { ip: '8.8.4.4', userAgent: 'bench-orders/1.0' };
    const pickup = { mode: 'PICKUP', scheduleType: 'ASAP' };
    // The bench store is at Chicago's 60601; this address is in its 5 km delivery radius.
    const delivery = {
      mode: 'DELIVERY_BY_MERCHANT',
      scheduleType: 'ASAP',
      address: { address1: '100 S Wacker Dr', city: 'Chicago', state: 'IL', postalCode: '60606' },
      deliveryType: 'DOOR_TO_DOOR',
    };
    const bodyFor = (fulfillment) =>
      Buffer.from(JSON.stringify({ cart, fulfillment, client, paymentType: 'CARD', tip: 2 }));
    const workloads = [
      { name: 'validate pickup', body: bodyFor(pickup) },
      { name: 'validate delivery', body: bodyFor(delivery) },
    ];

    const url = platform.url('/v1/marketfront/orders/validate');
    const headers = {
      authorization: `Bearer ${distribution.apiKey}`,
      'content-type': 'application/json',
    };
    let validated;
    for (const workload of workloads) {
      const response = await fetch(url, { method: 'POST', headers, body: workload.body });
      const text = await response.text();
      const order = JSON.parse(text);
      if (response.status !== 200 || !order.isValid) {
        throw new Error(`${workload.name} answered ${response.status}: ${text.slice(0, 4000)}`);
      }
      validated ??= { text, order };
    }
    report.table('Set-up', [
      {
        'catalog items': Object.keys(doc.items).length,
        'ingest s': round2(ingestSeconds),
        'cart lines': CART_LINES,
        'line items incl. modifiers': countLines(lines),
        'request bytes (pickup)': workloads[0].body.length,
        'validated order bytes': Buffer.byteLength(validated.text),
        total: validated.order.amounts.total,
      },
    ]);

    const platformCpu = ['gateway', 'ordering', 'stores', 'nats'];
    const results = new Map();
    for (const workload of workloads) {
      log(`${workload.name}: warming up at ${WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
      await pacedLoad({
        url,
        method: 'POST',
        headers,
        body: workload.body,
        rate: WARMUP_RATE,
        seconds: WARMUP_SECONDS,
      });
      const rows = [];
      for (const rate of RATES) {
        log(`${workload.name}: ${rate} req/s for ${seconds} s`);
        const result = await withCpu(platformCpu, () =>
          pacedLoad({ url, method: 'POST', headers, body: workload.body, rate, seconds }),
        );
        results.set(`${workload.name} ${rate}`, result);
        rows.push(row(`${workload.name} at ${rate}/s`, rate, result));
      }
      log(`${workload.name}: peak, ${CONNECTIONS} connections`);
      const peak = await withCpu(platformCpu, () =>
        peakLoad({
          url,
          method: 'POST',
          headers,
          body: workload.body,
          connections: CONNECTIONS,
          seconds,
        }),
      );
      rows.push(row(`${workload.name} peak (${CONNECTIONS} connections)`, undefined, peak));
      report.table(`${workload.name}: gateway → NATS → ordering (→ stores, catalog cache)`, rows);
    }

    log('floor: Fastify → NATS → fixed validated order');
    const floorUrl = `${await startFloor(platform, validated.text)}/validate`;
    const floorRows = [];
    for (const rate of RATES) {
      const result = await withCpu(['forwarder', 'responder', 'nats'], () =>
        pacedLoad({
          url: floorUrl,
          method: 'POST',
          headers,
          body: workloads[0].body,
          rate,
          seconds,
        }),
      );
      floorRows.push(row(`floor at ${rate}/s`, rate, result));
    }
    const floorPeak = await withCpu(['forwarder', 'responder', 'nats'], () =>
      peakLoad({
        url: floorUrl,
        method: 'POST',
        headers,
        body: workloads[0].body,
        connections: CONNECTIONS,
        seconds,
      }),
    );
    floorRows.push(row(`floor peak (${CONNECTIONS} connections)`, undefined, floorPeak));
    report.table(
      "Floor of the architecture in the same run: Fastify passes the pickup bodies unparsed over NATS to a responder answering the validated order, fixed (the gateway's and ordering's I/O with none of their work)",
      floorRows,
    );

    for (const workload of workloads) {
      const atTarget = results.get(`${workload.name} ${TARGET_RATE}`);
      const met =
        atTarget.achievedRate >= TARGET_RATE * 0.99 &&
        atTarget.p99 < TARGET_P99_MS &&
        atTarget.non2xx === 0;
      report.verdicts.push(
        `${workload.name} at ${TARGET_RATE}/s: achieved ${atTarget.achievedRate}/s, p99 ${atTarget.p99} ms, ` +
          `${atTarget.non2xx} non-2xx → target (p99 < ${TARGET_P99_MS} ms) ${met ? 'MET' : 'NOT MET'}`,
      );
    }
    report.print();
  },
  () => report.print(),
);
