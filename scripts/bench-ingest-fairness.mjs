// `npm run bench:ingest:fairness`: one partner's CatalogSet ingest latency (notify →
// succeeded) with the platform idle, then while another partner floods: it notifies
// BENCH_FLOOD_STORES stores whose callbacks drip one byte every 10 s, and keeps notifying them
// at BENCH_FLOOD_RATE per second (refusals for a full queue counted). The goal: the victim's
// median under flood within 2× its idle median. The catalog runs with its defaults (per-partner
// share, minimum download rate); BENCH_REPLICAS=2 runs production's two replicas.
// Options: BENCH_FLOOD_STORES=50 BENCH_FLOOD_RATE=5 BENCH_FLOOD_SECONDS=30 (victim ingests
// back to back under the flood this long) BENCH_RUNS=5 BENCH_ITEMS=1000 BENCH_PORT=18083
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { BenchPlatform, printTable } from './lib/bench-platform.mjs';
import { generateCatalogSet } from './lib/catalog-generator.mjs';
import { fail, log } from './lib/setup.mjs';

const floodStores = Number(process.env.BENCH_FLOOD_STORES ?? 50);
const floodRate = Number(process.env.BENCH_FLOOD_RATE ?? 5);
const runs = Number(process.env.BENCH_RUNS ?? 5);
const items = Number(process.env.BENCH_ITEMS ?? 1000);
const port = Number(process.env.BENCH_PORT ?? 18083);
const floodSeconds = Number(process.env.BENCH_FLOOD_SECONDS ?? 30);
if (
  ![floodStores, runs, items].every((n) => Number.isInteger(n) && n > 0) ||
  !(floodRate > 0) ||
  !(floodSeconds > 0)
) {
  fail(new Error('BENCH_FLOOD_STORES, BENCH_RUNS, BENCH_ITEMS, BENCH_FLOOD_* must be positive'));
}
const DRIP_INTERVAL_MS = 10_000;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const round = (value) => Number(value.toFixed(3));

// The flooder's callbacks: headers at once, then a byte every 10 s, never finishing.
const drips = new Set();
const dripServer = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.write('[');
  const timer = setInterval(() => response.write(' '), DRIP_INTERVAL_MS);
  drips.add(response);
  response.on('close', () => {
    clearInterval(timer);
    drips.delete(response);
  });
});
await new Promise((resolve) => dripServer.listen(0, '127.0.0.1', resolve));
const dripBase = `http://127.0.0.1:${dripServer.address().port}`;

const platform = await BenchPlatform.create({ port, serveDocuments: true });
const rows = [];
const notes = [];

function printReport() {
  if (rows.length === 0) return;
  printTable(
    `Victim partner's ingest (${items} items, notify → succeeded), idle and under another ` +
      `partner's flood (${floodStores} dripping stores, re-notified at ${floodRate}/s)`,
    rows,
  );
  for (const note of notes) process.stdout.write(`${note}\n`);
}

await platform.run(async () => {
  const { commerce: victim } = platform.createPartners();
  const flooder = platform.admin('create-partner', '--kind', 'commerce', '--name', 'bench flooder');
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
    (await platform.ingest(victimStore, platform.documentUrl(documentPath), victim.apiKey)).seconds;

  // A warm-up, then the idle runs.
  await ingestVictim();
  const idle = [];
  for (let run = 0; run < runs; run++) idle.push(await ingestVictim());
  log(`idle: ${idle.map(round).join(', ')} s`);

  log(`flooder: creating ${floodStores} stores`);
  const stores = [];
  for (let i = 0; i < floodStores; i++) {
    stores.push(await platform.createStore(flooder.apiKey, `Bench flood store ${i}`));
  }
  const outcomes = { accepted: 0, refused: 0, other: 0 };
  const notifyFlood = async (storeId) => {
    const response = await fetch(
      platform.url(`/v1/commerce/catalogset-notification?storeId=${storeId}`),
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${flooder.apiKey}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ callbackUrl: `${dripBase}/${storeId}` }),
      },
    );
    await response.arrayBuffer();
    if (response.status === 202) outcomes.accepted += 1;
    else if (response.status === 429) outcomes.refused += 1;
    else outcomes.other += 1;
  };
  await Promise.all(stores.map(notifyFlood));
  let next = 0;
  const flood = setInterval(
    () => void notifyFlood(stores[next++ % stores.length]).catch(() => (outcomes.other += 1)),
    1000 / floodRate,
  );
  // Let the flood take the slots before the victim notifies.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const flooded = [];
  const floodStarted = performance.now();
  // Ingest after ingest until the flood has run BENCH_FLOOD_SECONDS, at least `runs` of them.
  while (flooded.length < runs || performance.now() - floodStarted < floodSeconds * 1000) {
    flooded.push(await ingestVictim());
  }
  clearInterval(flood);
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
  notes.push(
    `flood: ${outcomes.accepted} notifications accepted, ${outcomes.refused} refused ` +
      `(429), ${outcomes.other} other, over ${round((performance.now() - floodStarted) / 1000)} s; ` +
      `${drips.size} dripping downloads open at the end`,
    `ratio under flood / idle (median): ${round(floodMedian / idleMedian)}; ` +
      `target within 2×: ${floodMedian <= 2 * idleMedian ? 'met' : 'NOT MET'}`,
  );
  printReport();
}, printReport);
for (const response of drips) response.destroy();
dripServer.close();
