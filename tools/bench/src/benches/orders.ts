// Order validate (pickup, delivery), place (a fresh Idempotency-Key each, the card authorized
// at the simulator) and the replay of a placed key through the gateway, paced and at peak,
// beside the floor taking validate's load. Targets: validate 1,000 req/s with p99 < 25 ms;
// place 200 req/s with p99 < 20 ms + the processor's 20 ms; replay 1,000 req/s, p99 < 15 ms.
import { randomUUID } from 'node:crypto';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { fail, log } from '@pcp/setup';
import { alwaysOpen, buildLines, countLines, openAllWeek, type CartLine } from '../cart-builder.js';
import { startFloor } from '../floors/floor.js';
import { envNumber, round2 } from '../helpers.js';
import { cpuLoadRow, cpuMeter, type CpuFigures } from '../load/cpu.js';
import { pacedLoad, peakLoad, type LoadResult, type LoadTarget } from '../load/paced-load.js';
import { BenchPlatform, type Partner } from '../platform/bench-platform.js';
import { Report, type Row } from '../report.js';

const LOADS = ['validate', 'place', 'replay', 'floor'];
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

type Measured = LoadResult & CpuFigures;

interface ValidatedOrder {
  isValid: boolean;
  amounts: { total: number };
}

export async function run(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 15);
  const port = envNumber('BENCH_PORT', 18103);
  const itemCount = envNumber('BENCH_ITEMS', 2_000);
  const only = (process.env.BENCH_ONLY ?? LOADS.join(',')).split(',').map((name) => name.trim());
  if (
    !(seconds > 0) ||
    !Number.isInteger(port) ||
    !Number.isInteger(itemCount) ||
    itemCount < 100
  ) {
    fail(new Error('BENCH_SECONDS must be positive, BENCH_PORT an integer, BENCH_ITEMS >= 100'));
  }
  if (only.length === 0 || only.some((name) => !LOADS.includes(name))) {
    fail(new Error(`BENCH_ONLY lists some of ${LOADS.join(', ')}`));
  }
  const runs = (load: string) => only.includes(load);

  const platform = await BenchPlatform.create({
    port,
    serveDocuments: true,
    processorLatencyMs: PROCESSOR_LATENCY_MS,
  });
  const withCpu = cpuMeter(platform);
  const report = new Report();
  const results = new Map<string, Measured>();

  /** Each run's first failure, printed with the verdicts. */
  const failures: string[] = [];
  function row(label: string, rate: number | undefined, result: Measured) {
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

  /**
   * `name` warmed up, paced at each of `rates` (results kept as `${name} ${rate}`), then at
   * its peak: its table.
   */
  async function measure(
    name: string,
    load: LoadTarget,
    {
      rates,
      warmupRate,
      cpu,
      title,
    }: { rates: number[]; warmupRate?: number; cpu: string[]; title: string },
  ) {
    if (warmupRate !== undefined) {
      log(`${name}: warming up at ${warmupRate} req/s for ${WARMUP_SECONDS} s`);
      await pacedLoad({ ...load, rate: warmupRate, seconds: WARMUP_SECONDS });
    }
    const rows: Row[] = [];
    for (const rate of rates) {
      log(`${name}: ${rate} req/s for ${seconds} s`);
      const result = await withCpu(cpu, () => pacedLoad({ ...load, rate, seconds }));
      results.set(`${name} ${rate}`, result);
      rows.push(row(`${name} at ${rate}/s`, rate, result));
    }
    log(`${name}: peak, ${CONNECTIONS} connections`);
    const peak = await withCpu(cpu, () => peakLoad({ ...load, connections: CONNECTIONS, seconds }));
    rows.push(row(`${name} peak (${CONNECTIONS} connections)`, undefined, peak));
    report.table(title, rows);
  }

  function verdict(name: string, rate: number, p99Ms: number, note = '') {
    const atTarget = results.get(`${name} ${rate}`)!;
    const met =
      atTarget.achievedRate >= rate * 0.99 && atTarget.p99 < p99Ms && atTarget.non2xx === 0;
    report.verdicts.push(
      `${name} at ${rate}/s: achieved ${atTarget.achievedRate}/s, p99 ${atTarget.p99} ms, ` +
        `${atTarget.non2xx} non-2xx → target (p99 < ${p99Ms} ms${note}) ${met ? 'MET' : 'NOT MET'}`,
    );
  }

  await platform.run(
    async () => {
      const { commerce, distribution } = platform.createPartners();
      platform.setRateLimits(commerce, { writes: 100_000, reads: 100_000 });
      // Distribution partners may pay by CARD by default (create-partner's paymentTypes).
      platform.setRateLimits(distribution, { reads: 1_000_000, writes: 1_000_000 });
      const storeId = await platform.createStore(commerce.apiKey, 'Bench Orders Store', {
        availability: alwaysOpen,
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
      const bodyFor = (fulfillment: object) =>
        Buffer.from(JSON.stringify({ cart, fulfillment, client, paymentType: 'CARD', tip: 2 }));
      const workloads = [
        { name: 'validate pickup', body: bodyFor(pickup) },
        { name: 'validate delivery', body: bodyFor(delivery) },
      ] as const;

      const url = platform.url('/v1/marketfront/orders/validate');
      const headers = {
        authorization: `Bearer ${distribution.apiKey}`,
        'content-type': 'application/json',
      };
      let validated: { text: string; order: ValidatedOrder } | undefined;
      for (const workload of workloads) {
        const response = await fetch(url, { method: 'POST', headers, body: workload.body });
        const text = await response.text();
        const order = JSON.parse(text) as ValidatedOrder;
        if (response.status !== 200 || !order.isValid) {
          throw new Error(`${workload.name} answered ${response.status}: ${text.slice(0, 4000)}`);
        }
        validated ??= { text, order };
      }
      if (!validated) throw new Error('nothing validated');
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
      for (const workload of runs('validate') ? workloads : []) {
        await measure(
          workload.name,
          { url, method: 'POST', headers, body: workload.body },
          {
            rates: RATES,
            warmupRate: WARMUP_RATE,
            cpu: platformCpu,
            title: `${workload.name}: gateway → NATS → ordering (→ stores, catalog cache)`,
          },
        );
      }
      if (runs('place') || runs('replay')) {
        await placeAndReplay({
          distribution,
          headers,
          cart,
          pickup,
          client,
          total: validated.order.amounts.total,
        });
      }
      if (runs('floor')) {
        log('floor: Fastify → NATS → fixed validated order');
        const floorUrl = `${await startFloor(platform, validated.text)}/validate`;
        await measure(
          'floor',
          { url: floorUrl, method: 'POST', headers, body: workloads[0].body },
          {
            rates: RATES,
            cpu: ['forwarder', 'responder', 'nats', 'postgres'],
            title:
              "Floor of the architecture in the same run: Fastify passes the pickup bodies unparsed over NATS to a responder answering the validated order, fixed (the gateway's and ordering's I/O with none of their work)",
          },
        );
      }

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
    },
    () => printReport(),
  );

  async function placeAndReplay({
    distribution,
    headers,
    cart,
    pickup,
    client,
    total,
  }: {
    distribution: Partner;
    headers: Record<string, string>;
    cart: { catalogSetId: string; storeId: string; lineItems: CartLine[] };
    pickup: object;
    client: object;
    total: number;
  }) {
    log('vaulting a card');
    const endUserHeaders = { ...headers, 'x-end-user-id': END_USER_ID };
    const paymentId = await platform.vaultCard(distribution, END_USER_ID);
    const placeUrl = platform.url('/v1/marketfront/orders/place');
    const placeBody = Buffer.from(
      JSON.stringify({
        cart,
        fulfillment: pickup,
        client,
        paymentType: 'CARD',
        paymentId,
        tip: 2,
        amounts: { total },
      }),
    );
    const place = (key: string) =>
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
    const placed = JSON.parse(firstPlaceText) as {
      orderId: string;
      state: string;
      status: string;
      amounts: { total: number };
    };
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
      await measure(
        'place',
        {
          url: placeUrl,
          method: 'POST',
          headers: endUserHeaders,
          body: placeBody,
          keyHeader: 'idempotency-key',
        },
        {
          rates: PLACE_RATES,
          warmupRate: PLACE_WARMUP_RATE,
          cpu: placeCpu,
          title: `place, a fresh Idempotency-Key each: gateway → NATS → ordering (→ stores, catalog cache; → payments → processor simulator at ${PROCESSOR_LATENCY_MS} ms)`,
        },
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
    const checkReplays = async (when: string) => {
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
    await measure(
      'replay',
      {
        url: placeUrl,
        method: 'POST',
        headers: { ...endUserHeaders, 'idempotency-key': replayKey },
        body: placeBody,
      },
      {
        rates: REPLAY_RATES,
        warmupRate: WARMUP_RATE,
        cpu: placeCpu,
        title: `replay of a placed key (same key and body; 201, Idempotent-Replayed: true): gateway → NATS → ordering (recorded outcome)`,
      },
    );
    await checkReplays('after the load');
  }
}
