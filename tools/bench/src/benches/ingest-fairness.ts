// One partner's CatalogSet ingest latency (notify → succeeded) idle, then while another
// partner floods with stores whose callbacks drip a byte every 10 s. Goal: the victim's
// median under flood within 2× its idle median.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { fail, log } from '@pcp/setup';
import { envNumber, median, sleep } from '../helpers.js';
import { BenchPlatform, type Partner } from '../platform/bench-platform.js';
import { printTable, type Row } from '../report.js';

const DRIP_INTERVAL_MS = 10_000;

const round = (value: number) => Number(value.toFixed(3));

/** The flooder's callbacks: headers at once, then a byte every 10 s, never finishing. */
async function startDripServer() {
  const drips = new Set<ServerResponse>();
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('[');
    const timer = setInterval(() => response.write(' '), DRIP_INTERVAL_MS);
    drips.add(response);
    response.on('close', () => {
      clearInterval(timer);
      drips.delete(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open: () => drips.size,
    close() {
      for (const response of drips) response.destroy();
      server.close();
    },
  };
}

export async function run(): Promise<void> {
  const floodStores = envNumber('BENCH_FLOOD_STORES', 50);
  const floodRate = envNumber('BENCH_FLOOD_RATE', 5);
  const runs = envNumber('BENCH_RUNS', 5);
  const items = envNumber('BENCH_ITEMS', 1000);
  const port = envNumber('BENCH_PORT', 18083);
  const floodSeconds = envNumber('BENCH_FLOOD_SECONDS', 30);
  if (
    ![floodStores, runs, items].every((n) => Number.isInteger(n) && n > 0) ||
    !(floodRate > 0) ||
    !(floodSeconds > 0)
  ) {
    fail(new Error('BENCH_FLOOD_STORES, BENCH_RUNS, BENCH_ITEMS, BENCH_FLOOD_* must be positive'));
  }

  const drip = await startDripServer();
  const platform = await BenchPlatform.create({ port, serveDocuments: true });
  const rows: Row[] = [];
  const notes: string[] = [];

  function printReport() {
    if (rows.length === 0) return;
    printTable(
      `Victim partner's ingest (${items} items, notify → succeeded), idle and under another ` +
        `partner's flood (${floodStores} dripping stores, re-notified at ${floodRate}/s)`,
      rows,
    );
    for (const note of notes) process.stdout.write(`${note}\n`);
  }

  /** Notify the flooder's dripping stores, at once and then at floodRate; stop() ends it. */
  async function startFlood(flooder: Partner) {
    log(`flooder: creating ${floodStores} stores`);
    const stores: string[] = [];
    for (let i = 0; i < floodStores; i++) {
      stores.push(await platform.createStore(flooder.apiKey, `Bench flood store ${i}`));
    }
    const outcomes = { accepted: 0, refused: 0, other: 0 };
    const notifyFlood = async (storeId: string) => {
      const response = await fetch(
        platform.url(`/v1/commerce/catalogset-notification?storeId=${storeId}`),
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${flooder.apiKey}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ callbackUrl: `${drip.base}/${storeId}` }),
        },
      );
      await response.arrayBuffer();
      if (response.status === 202) outcomes.accepted += 1;
      else if (response.status === 429) outcomes.refused += 1;
      else outcomes.other += 1;
    };
    await Promise.all(stores.map(notifyFlood));
    let next = 0;
    const timer = setInterval(
      () => void notifyFlood(stores[next++ % stores.length]!).catch(() => (outcomes.other += 1)),
      1000 / floodRate,
    );
    return { outcomes, stop: () => clearInterval(timer) };
  }

  await platform.run(async () => {
    const { commerce: victim } = platform.createPartners();
    const flooder = platform.admin(
      'create-partner',
      '--kind',
      'commerce',
      '--name',
      'bench flooder',
    );
    for (const partner of [victim, flooder]) {
      platform.setRateLimits(partner, { writes: 100_000, reads: 100_000 });
    }

    const victimStore = await platform.createStore(victim.apiKey, 'Bench victim store');
    const documentPath = '/catalogsets/victim.json';
    platform.documents.set(
      documentPath,
      Buffer.from(JSON.stringify(generateCatalogSet({ storeId: victimStore, items }))),
    );
    const ingestVictim = async () =>
      (await platform.ingest(victimStore, platform.documentUrl(documentPath), victim.apiKey))
        .seconds;

    // A warm-up, then the idle runs.
    await ingestVictim();
    const idle: number[] = [];
    for (let run = 0; run < runs; run++) idle.push(await ingestVictim());
    log(`idle: ${idle.map(round).join(', ')} s`);

    const flood = await startFlood(flooder);
    // Let the flood take the slots before the victim notifies.
    await sleep(2_000);
    const flooded: number[] = [];
    const floodStarted = performance.now();
    // Ingest after ingest until the flood has run BENCH_FLOOD_SECONDS, at least `runs` of them.
    while (flooded.length < runs || performance.now() - floodStarted < floodSeconds * 1000) {
      flooded.push(await ingestVictim());
    }
    flood.stop();
    log(`under flood: ${flooded.map(round).join(', ')} s`);

    const idleMedian = median(idle);
    const floodMedian = median(flooded);
    rows.push(
      { phase: 'idle', runs, 'median s': round(idleMedian), 'max s': round(Math.max(...idle)) },
      {
        phase: 'under flood',
        runs: flooded.length,
        'median s': round(floodMedian),
        'max s': round(Math.max(...flooded)),
      },
    );
    const { outcomes } = flood;
    notes.push(
      `flood: ${outcomes.accepted} notifications accepted, ${outcomes.refused} refused ` +
        `(429), ${outcomes.other} other, over ${round((performance.now() - floodStarted) / 1000)} s; ` +
        `${drip.open()} dripping downloads open at the end`,
      `ratio under flood / idle (median): ${round(floodMedian / idleMedian)}; ` +
        `target within 2×: ${floodMedian <= 2 * idleMedian ? 'met' : 'NOT MET'}`,
    );
    printReport();
  }, printReport);
  drip.close();
}
