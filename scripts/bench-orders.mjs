// `npm run bench:orders`: order validation and placing through gateway → NATS → ordering
// (which asks the stores service for the store, its availability at the order time and
// delivery coverage, and prices the cart from its catalog cache), the platform's services
// as separate processes on an isolated database, subject prefix and Redis key prefix, the
// card processor simulator answering after 20 ms. A generated BENCH_ITEMS-item CatalogSet
// (modifierDepth 2, always open) is ingested and a valid 5-line cart with nested modifiers
// is built from it; each workload runs open loop at fixed rates (requests evenly spaced,
// latency from each request's scheduled send time), then unthrottled for the peak:
//   - validate, for pickup and for delivery to an address;
//   - place (pickup, a vaulted card, the validated total) with a fresh Idempotency-Key per
//     request: re-validation, the order and its attempt written, the card authorized at the
//     processor (→ payments → simulator), no submission (the bench store has no
//     orderSubmissionUrl);
//   - the replay of a placed key: the same key and body again, each answered 201 with
//     Idempotent-Replayed: true from the recorded outcome.
// In the same run the architecture's floor (Fastify → NATS → a responder answering the same
// validated order, fixed) takes validate's load: the floor of all three. Targets: validate
// 1,000 req/s with p99 < 25 ms; place 200 req/s with p99 < 20 ms + the processor's 20 ms;
// replay 1,000 req/s with p99 < 15 ms. Options: BENCH_SECONDS=15 BENCH_PORT=18103
// BENCH_ITEMS=2000, BENCH_ONLY=validate,place,replay,floor (the loads to run, e.g. one at a
// time under a profiler) and BENCH_NODE_ARGS (Node flags for the services).
import { randomUUID } from 'node:crypto';
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
const LOADS = ['validate', 'place', 'replay', 'floor'];
const only = (process.env.BENCH_ONLY ?? LOADS.join(',')).split(',').map((name) => name.trim());
if (!(seconds > 0) || !Number.isInteger(port) || !Number.isInteger(itemCount) || itemCount < 100) {
  fail(new Error('BENCH_SECONDS must be positive, BENCH_PORT an integer, BENCH_ITEMS >= 100'));
}
if (only.length === 0 || only.some((name) => !LOADS.includes(name))) {
  fail(new Error(`BENCH_ONLY lists some of ${LOADS.join(', ')}`));
}
const runs = (load) => only.includes(load);
const RATES = [250, 500, 1_000];
const TARGET_RATE = 1_000;
const TARGET_P99_MS = 25;
const WARMUP_RATE = 200;
const WARMUP_SECONDS = 5;
const CART_LINES = 5;
const CONNECTIONS = 32;
/** The card processor simulator's latency; validate never calls it. */
const PROCESSOR_LATENCY_MS = 20;
const PLACE_RATES = [50, 100, 200];
const PLACE_TARGET_RATE = 200;
const PLACE_TARGET_P99_MS = 20 + PROCESSOR_LATENCY_MS;
const PLACE_WARMUP_RATE = 50;
const REPLAY_RATES = [250, 500, 1_000];
const REPLAY_TARGET_RATE = 1_000;
const REPLAY_TARGET_P99_MS = 15;
/** Replays checked one by one (status, header, body) before and after the replay load. */
const REPLAY_SAMPLE = 20;
const END_USER_ID = 'bench-orders-user';

const platform = await BenchPlatform.create({
  port,
  serveDocuments: true,
  processorLatencyMs: PROCESSOR_LATENCY_MS,
});
const withCpu = cpuMeter(platform);
const report = new Report();

/** Each run's first failure (pacedLoad's or peakLoad's firstFailure), printed with the verdicts. */
const failures = [];
function row(label, rate, result) {
  if (result.firstFailure) {
    log(`${label}: first failure: ${result.firstFailure}`);
    failures.push(`${label}: first failure: ${result.firstFailure}`);
  }
  return cpuLoadRow(label, rate, result);
}
const printReport = () => {
  report.verdicts.push(...failures.splice(0));
  report.print();
};

await platform.run(
  async () => {
    const { commerce, distribution } = platform.createPartners();
    platform.setRateLimits(commerce, { writes: 100_000, reads: 100_000 });
    // Distribution partners may pay by CARD by default (create-partner's paymentTypes).
    platform.setRateLimits(distribution, { reads: 1_000_000, writes: 1_000_000 });
    const everyDay = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
    const storeId = await platform.createStore(commerce.apiKey, 'Bench Orders Store', {
      availability: everyDay.map((dayOfWeek) => ({
        dayOfWeek,
        start: '00:00:00',
        end: '00:00:00',
      })),
      // No submission URL: place would POST each order to it.
      orderSubmissionUrl: null,
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

    const platformCpu = ['gateway', 'ordering', 'stores', 'nats', 'postgres'];
    const results = new Map();
    for (const workload of runs('validate') ? workloads : []) {
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

    if (runs('place') || runs('replay')) await placeAndReplay();
    if (runs('floor')) await floor();

    if (runs('validate')) {
      for (const workload of workloads) verdict(workload.name, TARGET_RATE, TARGET_P99_MS);
    }
    if (runs('place')) {
      verdict(
        'place',
        PLACE_TARGET_RATE,
        PLACE_TARGET_P99_MS,
        ` = 20 + the processor's ${PROCESSOR_LATENCY_MS}`,
      );
    }
    if (runs('replay')) verdict('replay', REPLAY_TARGET_RATE, REPLAY_TARGET_P99_MS);
    printReport();

    function verdict(name, rate, p99Ms, note = '') {
      const atTarget = results.get(`${name} ${rate}`);
      const met =
        atTarget.achievedRate >= rate * 0.99 && atTarget.p99 < p99Ms && atTarget.non2xx === 0;
      report.verdicts.push(
        `${name} at ${rate}/s: achieved ${atTarget.achievedRate}/s, p99 ${atTarget.p99} ms, ` +
          `${atTarget.non2xx} non-2xx → target (p99 < ${p99Ms} ms${note}) ${met ? 'MET' : 'NOT MET'}`,
      );
    }

    async function placeAndReplay() {
      log('vaulting a card');
      const endUserHeaders = { ...headers, 'x-end-user-id': END_USER_ID };
      const vault = await fetch(platform.url('/v1/marketfront/payments/cards'), {
        method: 'POST',
        headers: endUserHeaders,
        body: JSON.stringify({
          cardNumber: '4242424242424242',
          expMonth: 12,
          expYear: 2035,
          cvc: '123',
          cardholderName: 'Bench',
        }),
      });
      if (vault.status !== 201) {
        throw new Error(`vaulting a card answered ${vault.status}: ${await vault.text()}`);
      }
      const { paymentId } = await vault.json();
      const placeUrl = platform.url('/v1/marketfront/orders/place');
      const placeBody = Buffer.from(
        JSON.stringify({
          cart,
          fulfillment: pickup,
          client,
          paymentType: 'CARD',
          paymentId,
          tip: 2,
          amounts: { total: validated.order.amounts.total },
        }),
      );
      const place = (key) =>
        fetch(placeUrl, {
          method: 'POST',
          headers: { ...endUserHeaders, 'idempotency-key': key },
          body: placeBody,
        });
      const firstPlace = await place(randomUUID());
      const firstPlaceText = await firstPlace.text();
      if (firstPlace.status !== 201) {
        throw new Error(`place answered ${firstPlace.status}: ${firstPlaceText.slice(0, 4000)}`);
      }
      const placed = JSON.parse(firstPlaceText);
      log(
        `placed order ${placed.orderId}: ${placed.state}/${placed.status}, ` +
          `total ${placed.amounts.total}, ${Buffer.byteLength(firstPlaceText)} bytes`,
      );

      const placeCpu = [
        'gateway',
        'ordering',
        'payments',
        'processor-simulator',
        'stores',
        'nats',
        'postgres',
      ];
      if (runs('place')) {
        const placeLoad = {
          url: placeUrl,
          method: 'POST',
          headers: endUserHeaders,
          body: placeBody,
        };
        log(`place: warming up at ${PLACE_WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
        await pacedLoad({
          ...placeLoad,
          keyHeader: 'idempotency-key',
          rate: PLACE_WARMUP_RATE,
          seconds: WARMUP_SECONDS,
        });
        const placeRows = [];
        for (const rate of PLACE_RATES) {
          log(`place: ${rate} req/s for ${seconds} s`);
          const result = await withCpu(placeCpu, () =>
            pacedLoad({ ...placeLoad, keyHeader: 'idempotency-key', rate, seconds }),
          );
          results.set(`place ${rate}`, result);
          placeRows.push(row(`place at ${rate}/s`, rate, result));
        }
        log(`place: peak, ${CONNECTIONS} connections`);
        const placePeak = await withCpu(placeCpu, () =>
          peakLoad({
            ...placeLoad,
            keyHeader: 'idempotency-key',
            connections: CONNECTIONS,
            seconds,
          }),
        );
        placeRows.push(row(`place peak (${CONNECTIONS} connections)`, undefined, placePeak));
        report.table(
          `place, a fresh Idempotency-Key each: gateway → NATS → ordering (→ stores, catalog cache; → payments → processor simulator at ${PROCESSOR_LATENCY_MS} ms)`,
          placeRows,
        );
      }

      if (!runs('replay')) return;
      // The replay: one key placed once, then the same key and body again and again.
      const replayKey = randomUUID();
      const original = await place(replayKey);
      const originalText = await original.text();
      if (original.status !== 201) {
        throw new Error(`place answered ${original.status}: ${originalText.slice(0, 4000)}`);
      }
      const checkReplays = async (when) => {
        for (let i = 0; i < REPLAY_SAMPLE; i++) {
          const response = await place(replayKey);
          const text = await response.text();
          const replayed = response.headers.get('idempotent-replayed');
          if (response.status !== 201 || replayed !== 'true' || text !== originalText) {
            throw new Error(
              `replay ${when}: ${response.status}, idempotent-replayed ${replayed}, ` +
                `${text === originalText ? 'the same body' : `another body: ${text.slice(0, 2000)}`}`,
            );
          }
        }
        log(`replay ${when}: ${REPLAY_SAMPLE} of ${REPLAY_SAMPLE} 201, replayed, byte for byte`);
      };
      await checkReplays('before the load');
      const replayLoad = {
        url: placeUrl,
        method: 'POST',
        headers: { ...endUserHeaders, 'idempotency-key': replayKey },
        body: placeBody,
      };
      log(`replay: warming up at ${WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
      await pacedLoad({ ...replayLoad, rate: WARMUP_RATE, seconds: WARMUP_SECONDS });
      const replayRows = [];
      for (const rate of REPLAY_RATES) {
        log(`replay: ${rate} req/s for ${seconds} s`);
        const result = await withCpu(placeCpu, () => pacedLoad({ ...replayLoad, rate, seconds }));
        results.set(`replay ${rate}`, result);
        replayRows.push(row(`replay at ${rate}/s`, rate, result));
      }
      log(`replay: peak, ${CONNECTIONS} connections`);
      const replayPeak = await withCpu(placeCpu, () =>
        peakLoad({ ...replayLoad, connections: CONNECTIONS, seconds }),
      );
      replayRows.push(row(`replay peak (${CONNECTIONS} connections)`, undefined, replayPeak));
      await checkReplays('after the load');
      report.table(
        `replay of a placed key (same key and body; 201, Idempotent-Replayed: true): gateway → NATS → ordering (recorded outcome)`,
        replayRows,
      );
    }

    async function floor() {
      log('floor: Fastify → NATS → fixed validated order');
      const floorUrl = `${await startFloor(platform, validated.text)}/validate`;
      const floorRows = [];
      for (const rate of RATES) {
        const result = await withCpu(['forwarder', 'responder', 'nats', 'postgres'], () =>
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
      const floorPeak = await withCpu(['forwarder', 'responder', 'nats', 'postgres'], () =>
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
    }
  },
  () => printReport(),
);
