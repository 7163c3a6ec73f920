// The stateless cart helpers (add, reprice) through gateway → NATS → ordering on a generated
// catalog, paced and unthrottled, against three baselines answering the same bodies with the
// priced cart: bare Fastify, the floor (Fastify → NATS → fixed reply), and the floor plus the
// JSON work every cart service does. Target: 1,500 req/s with p99 < 20 ms.
import { generateCatalogSet, type GeneratedCatalogSet } from '@pcp/testing/catalog-generator';
import { fail, log } from '@pcp/setup';
import { buildLines, countLines, lineTotalMinor, openAllWeek } from '../cart-builder.js';
import { startBaseline, startFloor } from '../floors/floor.js';
import { envNumber, envNumbers, round2 } from '../helpers.js';
import { cpuLoadRow, cpuMeter, type CpuFigures } from '../load/cpu.js';
import { pacedLoad, peakLoad, type LoadResult } from '../load/paced-load.js';
import { BenchPlatform, type Partner } from '../platform/bench-platform.js';
import { Report, type Row } from '../report.js';

/** What BENCH_ONLY may list: the paced loads, add's peak, the baselines. */
const LOADS = ['add', 'reprice', 'peak', 'baselines'];
const WARMUP_RATE = 300;
const WARMUP_SECONDS = 5;
const TARGET_RATE = 1500;
const TARGET_P99_MS = 20;
/** "Achieved" counts as the target rate when within 1% of it. */
const RATE_TOLERANCE = 0.99;
const CART_LINES = 20;
/** Different 20th items for the add workload (each a valid line of its own). */
const ADD_VARIANTS = 20;
const REPRICE_VARIANTS = 60;
const CONNECTIONS = 32;

type Measured = LoadResult & CpuFigures;
type Key = 'add' | 'reprice' | 'baseline' | 'floor' | 'floorJson';

interface PricedCart {
  lineItems?: unknown[];
  subTotal: number;
  currency: string;
  itemCount: number;
}

export async function run(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 15);
  const port = envNumber('BENCH_PORT', 18083);
  const itemCount = envNumber('BENCH_ITEMS', 10_000);
  // e.g. BENCH_ONLY=add BENCH_RATES=800: one load at one rate, to profile it.
  const rates = envNumbers('BENCH_RATES', `500,1000,${TARGET_RATE}`);
  const only = (process.env.BENCH_ONLY ?? LOADS.join(',')).split(',').map((name) => name.trim());
  if (
    !(seconds > 0) ||
    !Number.isInteger(port) ||
    !Number.isInteger(itemCount) ||
    itemCount < 100 ||
    !rates.every((rate) => rate > 0)
  ) {
    fail(
      new Error(
        'BENCH_SECONDS and BENCH_RATES must be positive, BENCH_PORT an integer, BENCH_ITEMS >= 100',
      ),
    );
  }
  if (only.length === 0 || only.some((name) => !LOADS.includes(name))) {
    fail(new Error(`BENCH_ONLY lists some of ${LOADS.join(', ')}`));
  }
  const runs = (load: string) => only.includes(load);
  const platform = await BenchPlatform.create({ port, serveDocuments: true });
  const withCpu = cpuMeter(platform);
  const report = new Report();
  let firstFailure: string | undefined;

  /** Paced POST load with rotating bodies. */
  const pacedPost = async (load: {
    url: string;
    headers?: Record<string, string>;
    bodies: Buffer[];
    rate: number;
    seconds: number;
  }) => {
    const result = await pacedLoad({ method: 'POST', ...load });
    firstFailure ??= result.firstFailure;
    return result;
  };
  /** Unthrottled load with CONNECTIONS connections, bodies rotating. */
  const unthrottled = (url: string, headers: Record<string, string>, bodies: Buffer[]) =>
    peakLoad({ url, method: 'POST', headers, bodies, connections: CONNECTIONS, seconds });

  /** Ingest a generated catalog, every catalog always open; the document and ingest time. */
  async function ingestCatalog(storeId: string, commerce: Partner) {
    log(`generating a ${itemCount}-item CatalogSet (modifierDepth 2), every catalog always open`);
    const doc = generateCatalogSet({ storeId, items: itemCount, seed: 1, modifierDepth: 2 });
    openAllWeek(doc);
    const documentBody = Buffer.from(JSON.stringify(doc));
    platform.documents.set('/catalogset.json', documentBody);
    const { seconds: ingestSeconds } = await platform.ingest(
      storeId,
      platform.documentUrl('/catalogset.json'),
      commerce.apiKey,
    );
    platform.documents.delete('/catalogset.json');
    log(`ingested in ${round2(ingestSeconds)} s`);
    return { doc, documentBytes: documentBody.length, ingestSeconds };
  }

  await platform.run(
    async () => {
      const { commerce, distribution } = platform.createPartners();
      platform.setRateLimits(commerce, { writes: 100_000, reads: 100_000 });
      // 1,000,000 a minute is the CLI's ceiling; carts are in the reads class.
      platform.setRateLimits(distribution, { reads: 1_000_000 });
      const storeId = await platform.createStore(commerce.apiKey, 'Bench Cart Store');
      const { doc, documentBytes, ingestSeconds } = await ingestCatalog(storeId, commerce);

      const { candidates, lines } = buildLines(doc, CART_LINES + ADD_VARIANTS);
      const cartLines = lines.slice(0, CART_LINES);
      const cart19 = { catalogSetId: doc.catalogSetId, storeId, lineItems: cartLines.slice(0, -1) };
      const cart20 = { catalogSetId: doc.catalogSetId, storeId, lineItems: cartLines };
      const scale = 10 ** 2; // USD
      const expectedSubTotal =
        cartLines.reduce((sum, line) => sum + lineTotalMinor(doc, line, scale), 0) / scale;

      const cartsUrl = platform.url('/v1/marketfront/carts');
      const headers = { authorization: `Bearer ${distribution.apiKey}` };
      /** One POST; fails loudly with the response unless it is 200. */
      async function mustPrice(path: string, body: Buffer) {
        const response = await fetch(`${cartsUrl}/${path}`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body,
        });
        const text = await response.text();
        if (response.status !== 200) {
          throw new Error(
            `POST /v1/marketfront/carts/${path} returned ${response.status}:\n${text.slice(0, 4000)}\n` +
              `request body (first 2000 chars): ${body.toString('utf8').slice(0, 2000)}`,
          );
        }
        return { text, cart: JSON.parse(text) as PricedCart };
      }

      // The add workload: the 19-line cart plus its 20th line (first body) or another line.
      const addBodies = [
        cartLines.at(-1),
        ...lines.slice(CART_LINES, CART_LINES + ADD_VARIANTS - 1),
      ].map((item) => Buffer.from(JSON.stringify({ cart: cart19, item })));
      // The reprice workload: a quantity change (2..4) on each line of the 20-line cart in turn.
      const repriceBodies = Array.from({ length: REPRICE_VARIANTS }, (_, i) =>
        Buffer.from(
          JSON.stringify({
            cart: cart20,
            lineItemId: cartLines[i % CART_LINES]!.lineItemId,
            quantity: 2 + (i % 3),
          }),
        ),
      );

      log('verifying the cart: POST /carts/add with the 19-line cart plus the 20th item');
      const verified = await mustPrice('add', addBodies[0]!);
      if (verified.cart.lineItems?.length !== CART_LINES) {
        throw new Error(
          `priced cart has ${verified.cart.lineItems?.length} lines:\n${verified.text}`,
        );
      }
      log(
        `200: subTotal ${verified.cart.subTotal} ${verified.cart.currency}, itemCount ` +
          `${verified.cart.itemCount} (expected subTotal from the document: ${expectedSubTotal})`,
      );
      if (Math.abs(verified.cart.subTotal - expectedSubTotal) > 0.005) {
        log(`WARNING: served subTotal ${verified.cart.subTotal} != expected ${expectedSubTotal}`);
      }
      // Every rotated body must price too, or the load would measure error paths.
      let repriceResponseBytes = 0;
      for (const body of addBodies) await mustPrice('add', body);
      for (const body of repriceBodies) {
        repriceResponseBytes = Buffer.byteLength((await mustPrice('update', body)).text);
      }
      const pricedBytes = Buffer.byteLength(verified.text);

      report.table('Set-up', [
        {
          'catalog items': Object.keys(doc.items).length,
          'document MB': round2(documentBytes / 1024 / 1024),
          'ingest s': round2(ingestSeconds),
          'orderable items with 2-level modifiers': candidates,
          'cart lines': CART_LINES,
          'line items incl. modifiers': countLines(cartLines),
          'add request bytes': addBodies[0]!.length,
          'update request bytes': repriceBodies[0]!.length,
          'priced cart bytes (add / update)': `${pricedBytes} / ${repriceResponseBytes}`,
          subTotal: verified.cart.subTotal,
          'expected subTotal': expectedSubTotal,
          itemCount: verified.cart.itemCount,
        },
      ]);

      const results = new Map<Key, Map<number, Measured>>(
        (['add', 'reprice', 'baseline', 'floor', 'floorJson'] as const).map((key) => [
          key,
          new Map(),
        ]),
      );
      const addPeak = await measurePlatform({
        cartsUrl,
        headers,
        addBodies,
        repriceBodies,
        doc,
        results,
      });
      const baselines = runs('baselines')
        ? await measureBaselines(verified.text, pricedBytes, addBodies, results)
        : undefined;
      // The comparison needs every load, at the target rate among them.
      if (addPeak && baselines && runs('add') && runs('reprice') && rates.includes(TARGET_RATE)) {
        compare(addPeak, baselines, results);
      }
      if (firstFailure) log(`first failed response: ${firstFailure}`);
      report.print();
    },
    () => {
      report.print();
      if (firstFailure) log(`first failed response: ${firstFailure}`);
    },
  );

  /** The platform's figures against the baselines', and the verdicts on the target. */
  function compare(
    addPeak: Measured,
    [bare, floor, floorJson]: [Measured, Measured, Measured],
    results: Map<Key, Map<number, Measured>>,
  ): void {
    const atTarget = (key: Key) => results.get(key)!.get(TARGET_RATE)!;
    report.table('Platform vs bare Fastify and vs the floors', [
      {
        measure: 'peak req/s (unthrottled)',
        platform: addPeak.achievedRate,
        'bare Fastify': bare.achievedRate,
        'platform / bare': round2(addPeak.achievedRate / bare.achievedRate),
        floor: floor.achievedRate,
        'platform / floor': round2(addPeak.achievedRate / floor.achievedRate),
        'floor + JSON': floorJson.achievedRate,
      },
      ...(['add', 'reprice'] as const).map((workload) => ({
        measure: `p99 ms at ${TARGET_RATE} req/s (${workload})`,
        platform: atTarget(workload).p99,
        'bare Fastify': atTarget('baseline').p99,
        'platform / bare': round2(atTarget(workload).p99 / atTarget('baseline').p99),
        floor: atTarget('floor').p99,
        'platform / floor': round2(atTarget(workload).p99 / atTarget('floor').p99),
        'floor + JSON': atTarget('floorJson').p99,
      })),
    ]);

    const meets = (r: LoadResult) =>
      r.achievedRate >= TARGET_RATE * RATE_TOLERANCE &&
      r.p99 < TARGET_P99_MS &&
      r.non2xx === 0 &&
      r.errors === 0;
    const describe = (workload: Key) => {
      const r = atTarget(workload);
      return (
        `${workload} ${meets(r) ? 'met' : 'not met'} (achieved ${r.achievedRate} req/s, ` +
        `p99 ${r.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors})`
      );
    };
    const met = meets(atTarget('add')) && meets(atTarget('reprice'));
    report.verdicts = [
      `target 1,500 req/s with p99 < ${TARGET_P99_MS} ms: ${met ? 'met' : 'not met'}`,
      `  ${describe('add')}; ${describe('reprice')}`,
      `  peak (unthrottled add): ${addPeak.achievedRate} req/s, p99 ${addPeak.p99} ms`,
      `  the floor (Fastify → NATS → fixed reply) at ${TARGET_RATE} req/s: p99 ` +
        `${atTarget('floor').p99} ms, ${floor.achievedRate} req/s peak; with JSON work: ` +
        `p99 ${atTarget('floorJson').p99} ms, ${floorJson.achievedRate} req/s peak`,
    ];
  }

  /** The loads of BENCH_ONLY among add and reprice paced at the rates, then add's peak. */
  async function measurePlatform({
    cartsUrl,
    headers,
    addBodies,
    repriceBodies,
    doc,
    results,
  }: {
    cartsUrl: string;
    headers: Record<string, string>;
    addBodies: Buffer[];
    repriceBodies: Buffer[];
    doc: GeneratedCatalogSet;
    results: Map<Key, Map<number, Measured>>;
  }): Promise<Measured | undefined> {
    const platformCpu = ['gateway', 'ordering', 'catalog', 'nats'];
    const rows: Row[] = [];
    for (const [workload, path, bodies] of [
      ['add', 'add', addBodies],
      ['reprice', 'update', repriceBodies],
    ] as const) {
      if (!runs(workload)) continue;
      const url = `${cartsUrl}/${path}`;
      log(`${workload}: warming up at ${WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
      await pacedPost({ url, headers, bodies, rate: WARMUP_RATE, seconds: WARMUP_SECONDS });
      for (const rate of rates) {
        log(`${workload}: ${rate} req/s for ${seconds} s (open loop, evenly spaced)`);
        const result = await withCpu(platformCpu, () =>
          pacedPost({ url, headers, bodies, rate, seconds }),
        );
        results.get(workload)!.set(rate, result);
        rows.push(cpuLoadRow(`${workload} (POST /carts/${path})`, rate, result));
      }
    }
    let addPeak: Measured | undefined;
    if (runs('peak')) {
      log(`add: unthrottled for ${seconds} s with ${CONNECTIONS} connections (peak throughput)`);
      addPeak = await withCpu(platformCpu, () =>
        unthrottled(`${cartsUrl}/add`, headers, addBodies),
      );
      rows.push(cpuLoadRow(`add unthrottled (${CONNECTIONS} conns)`, 'max', addPeak));
    }
    report.table(
      `Platform: gateway → NATS → ordering (+ catalog version check), ${CART_LINES}-line cart ` +
        `with nested modifiers, ${Object.keys(doc.items).length}-item catalog; latency from ` +
        'scheduled send time',
      rows,
    );
    return addPeak;
  }

  /** The baselines answering the add bodies with the priced cart's bytes; their peaks. */
  async function measureBaselines(
    pricedText: string,
    pricedBytes: number,
    addBodies: Buffer[],
    results: Map<Key, Map<number, Measured>>,
  ): Promise<[Measured, Measured, Measured]> {
    const baselines = [
      {
        key: 'baseline' as const,
        label: 'bare Fastify POST (add bodies)',
        url: `${await startBaseline(platform, pricedText)}/cart`,
        cpu: ['fastify'],
        title:
          'Baseline in the same run: bare Fastify route in a child process, same add request ' +
          `bodies (parsed as JSON), fixed ${pricedBytes}-byte JSON response`,
      },
      {
        key: 'floor' as const,
        label: 'Fastify → NATS → fixed reply',
        url: `${await startFloor(platform, pricedText)}/cart`,
        cpu: ['forwarder', 'responder', 'nats'],
        title:
          "Floor of the architecture in the same run: Fastify passes the add bodies unparsed over NATS to a responder that answers the fixed priced cart (the gateway's and ordering's I/O with none of their work: no keys, rate limits, validation or pricing)",
      },
      {
        key: 'floorJson' as const,
        label: 'floor + JSON parse and serialize',
        url: `${await startFloor(platform, pricedText, { prefix: 'json-', json: true })}/cart`,
        cpu: ['json-forwarder', 'json-responder', 'nats'],
        title:
          'The floor plus the JSON work no cart service can skip: the responder parses each request body and serializes the priced cart for each reply (still no validation or pricing)',
      },
    ];
    const peaks: Measured[] = [];
    for (const baseline of baselines) {
      const rows: Row[] = [];
      const load = { url: baseline.url, bodies: addBodies };
      log(`${baseline.label}: warming up at ${WARMUP_RATE} req/s for ${WARMUP_SECONDS} s`);
      await pacedPost({ ...load, rate: WARMUP_RATE, seconds: WARMUP_SECONDS });
      for (const rate of rates) {
        log(`${baseline.label}: ${rate} req/s for ${seconds} s`);
        const result = await withCpu(baseline.cpu, () => pacedPost({ ...load, rate, seconds }));
        results.get(baseline.key)!.set(rate, result);
        rows.push(cpuLoadRow(baseline.label, rate, result));
      }
      log(`${baseline.label}: unthrottled for ${seconds} s with ${CONNECTIONS} connections`);
      const peak = await withCpu(baseline.cpu, () => unthrottled(baseline.url, {}, addBodies));
      rows.push(cpuLoadRow(`${baseline.label} unthrottled (${CONNECTIONS} conns)`, 'max', peak));
      report.table(baseline.title, rows);
      peaks.push(peak);
    }
    return peaks as [Measured, Measured, Measured];
  }
}
