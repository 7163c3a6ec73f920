// `npm run bench:ingest`: CatalogSet ingest through gateway → NATS → catalog worker → Postgres,
// with the platform running as separate processes on an isolated database, subject prefix and
// Redis key prefix. For generated documents of each size it reports notify-to-succeeded time
// (median and best of several runs), items/s, the catalog process's peak RSS (VmHWM) and the
// time to GET the served CatalogSet back, then checks the targets of the ingest issue.
// Then it measures whether the catalog service keeps answering while it ingests: status
// polls of the running ingest and GETs of another store's CatalogSet go through the gateway
// open loop at a fixed rate (latency from each request's scheduled send time), once with
// the platform idle and once from the notification of a BENCH_POLL_SIZE-item ingest on.
// Options: BENCH_SIZES=1000,10000,100000 BENCH_RUNS=3 BENCH_PORT=18081
// BENCH_POLL_SIZE=100000 (0 skips the polls) BENCH_POLL_RATE=20 (req/s per endpoint)
// BENCH_SECONDS (poll window; default: 1.5 times the measured median ingest time of that size)
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { BenchPlatform, printTable } from './lib/bench-platform.mjs';
import { generateCatalogSet } from './lib/catalog-generator.mjs';
import { pacedLoad } from './lib/paced-load.mjs';
import { fail, log } from './lib/setup.mjs';

const sizes = (process.env.BENCH_SIZES ?? '1000,10000,100000')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const port = Number(process.env.BENCH_PORT ?? 18081);
const pollSize = Number(process.env.BENCH_POLL_SIZE ?? 100_000);
const pollRate = Number(process.env.BENCH_POLL_RATE ?? 20);
const pollSeconds =
  process.env.BENCH_SECONDS === undefined ? undefined : Number(process.env.BENCH_SECONDS);
if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1) {
  fail(new Error('BENCH_SIZES must be positive integers and BENCH_RUNS a positive integer'));
}
if (!Number.isInteger(pollSize) || pollSize < 0 || !(pollRate > 0) || pollSeconds <= 0) {
  fail(
    new Error(
      'BENCH_POLL_SIZE must be an integer >= 0, BENCH_POLL_RATE and BENCH_SECONDS positive',
    ),
  );
}
/** Items of the other store's CatalogSet that is read while the large ingest runs. */
const READ_DOCUMENT_ITEMS = 200;
/** The bench's own wait for the large ingest polls this often (on top of the paced polls). */
const OUTCOME_POLL_MS = 250;
const MB = 1024 * 1024;

const platform = await BenchPlatform.create({ port, serveDocuments: true });

/** VmRSS and VmHWM (the kernel's high-water mark) of a process, in bytes. */
function memoryOf(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch (error) {
    throw new Error(`cannot read /proc/${pid}/status (has the catalog service exited?)`, {
      cause: error,
    });
  }
  const kB = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kB('VmRSS'), hwm: kB('VmHWM') };
}

/** The largest VmRSS and VmHWM among a service's processes (its replicas, with BENCH_REPLICAS). */
function serviceMemory(service) {
  const memories = platform.pidsOf(service).map(memoryOf);
  return {
    rss: Math.max(...memories.map((memory) => memory.rss)),
    hwm: Math.max(...memories.map((memory) => memory.hwm)),
  };
}

const round = (value, digits) => Number(value.toFixed(digits));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Time to GET the served CatalogSet in full; then If-None-Match with its ETag. */
async function fetchServed(storeId, apiKey, expectedItems) {
  const url = platform.url(`/v1/marketfront/stores/${storeId}/catalogset`);
  const headers = { authorization: `Bearer ${apiKey}` };
  const started = performance.now();
  const response = await fetch(url, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  const seconds = (performance.now() - started) / 1000;
  if (response.status !== 200) {
    throw new Error(`GET ${url}: ${response.status} ${body.toString('utf8', 0, 2000)}`);
  }
  const served = Object.keys(JSON.parse(body.toString('utf8')).items).length;
  if (served !== expectedItems) {
    throw new Error(`GET ${url} served ${served} items, expected ${expectedItems}`);
  }
  const etag = response.headers.get('etag');
  if (!etag) throw new Error(`GET ${url} carried no ETag`);
  const again = await fetch(url, { headers: { ...headers, 'if-none-match': etag } });
  await again.arrayBuffer();
  return { seconds, bytes: body.length, revalidateStatus: again.status };
}

const rows = [];
const results = new Map();
const pollRows = [];
const pollNotes = [];

/** Notify and return the 202's body (catalogIngestId, statusUrl). */
const notify = (storeId, callbackUrl, apiKey) =>
  platform.request('POST', `/v1/commerce/catalogset-notification?storeId=${storeId}`, apiKey, {
    callbackUrl,
  });

/** Poll a run until it is terminal; seconds since `started` when it succeeded. */
async function waitSucceeded(statusUrl, apiKey, started) {
  for (;;) {
    const status = await platform.request('GET', statusUrl, apiKey);
    if (status.status === 'succeeded') return (performance.now() - started) / 1000;
    if (status.status === 'failed') {
      throw new Error(`ingest ${statusUrl} failed:\n${JSON.stringify(status.errors, null, 2)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, OUTCOME_POLL_MS));
  }
}

/**
 * Status polls and reads of another store's CatalogSet, each at `pollRate` req/s for
 * `seconds`, both open loop through the gateway.
 */
function pollBoth({ statusUrl, readerStoreId, commerce, distribution, seconds }) {
  const paced = (path, apiKey) =>
    pacedLoad({
      url: platform.url(path),
      headers: { authorization: `Bearer ${apiKey}` },
      rate: pollRate,
      seconds,
    });
  return Promise.all([
    paced(statusUrl, commerce.apiKey),
    paced(`/v1/marketfront/stores/${readerStoreId}/catalogset`, distribution.apiKey),
  ]);
}

function pollRow(phase, endpoint, result) {
  if (result.firstFailure) log(`${phase}, ${endpoint}: first failure: ${result.firstFailure}`);
  return {
    phase,
    endpoint,
    requests: result.requests,
    'p50 ms': result.p50,
    'p99 ms': result.p99,
    'max ms': result.max,
    'non-2xx': result.non2xx,
    errors: result.errors,
  };
}

/**
 * The catalog service's responsiveness while it ingests a `pollSize`-item document: the
 * polls once with nothing running (baseline), then from the notification of the ingest on.
 */
async function measureResponsiveness({ commerce, distribution }) {
  const readerStoreId = await platform.createStore(commerce.apiKey, 'Bench reader store');
  const readerPath = '/catalogsets/reader.json';
  platform.documents.set(
    readerPath,
    Buffer.from(
      JSON.stringify(generateCatalogSet({ storeId: readerStoreId, items: READ_DOCUMENT_ITEMS })),
    ),
  );
  const reader = await notify(readerStoreId, platform.documentUrl(readerPath), commerce.apiKey);
  await waitSucceeded(reader.statusUrl, commerce.apiKey, performance.now());

  const storeId = await platform.createStore(commerce.apiKey, `Bench Store ${pollSize} (polled)`);
  const path = `/catalogsets/${pollSize}/polled.json`;
  log(`${pollSize} items (polled): generating the document`);
  platform.documents.set(
    path,
    Buffer.from(JSON.stringify(generateCatalogSet({ storeId, items: pollSize, seed: 99 }))),
  );
  const measured = results.get(pollSize)?.median;
  const seconds =
    pollSeconds ?? (measured === undefined ? 15 : Math.max(5, Math.ceil(measured * 1.5)));
  log(`polls at ${pollRate} req/s per endpoint for ${seconds} s: idle baseline`);
  const [idleStatus, idleReads] = await pollBoth({
    statusUrl: reader.statusUrl,
    readerStoreId,
    commerce,
    distribution,
    seconds,
  });
  pollRows.push(pollRow('idle', 'ingest status', idleStatus));
  pollRows.push(pollRow('idle', 'catalogset (other store)', idleReads));

  log(
    `polls at ${pollRate} req/s per endpoint for ${seconds} s: during the ${pollSize}-item ingest`,
  );
  const started = performance.now();
  const accepted = await notify(storeId, platform.documentUrl(path), commerce.apiKey);
  const [[busyStatus, busyReads], ingestSeconds] = await Promise.all([
    pollBoth({ statusUrl: accepted.statusUrl, readerStoreId, commerce, distribution, seconds }),
    waitSucceeded(accepted.statusUrl, commerce.apiKey, started),
  ]);
  platform.documents.delete(path);
  const phase = `during ${pollSize}-item ingest`;
  pollRows.push(pollRow(phase, 'ingest status', busyStatus));
  pollRows.push(pollRow(phase, 'catalogset (other store)', busyReads));
  const memory = serviceMemory('catalog');
  pollNotes.push(
    `the polled ${pollSize}-item ingest took ${round(ingestSeconds, 3)} s ` +
      `(poll window ${seconds} s); catalog VmHWM after it ${round(memory.hwm / MB, 1)} MB`,
  );
}

function printReport() {
  if (rows.length === 0) return;
  printTable(
    'CatalogSet ingest: notify → gateway → NATS → catalog worker (download, validate, ' +
      `store) → succeeded; ${runs} run(s) per size`,
    rows,
  );
  const target = (label, size, check) => {
    const result = results.get(size);
    const verdict = !result ? 'not measured' : check(result) ? 'met' : 'NOT MET';
    process.stdout.write(`target: ${label}: ${verdict}\n`);
  };
  target('10k items succeed in under 2 s (median)', 10_000, (r) => r.median < 2);
  target('100k items succeed in under 15 s (median)', 100_000, (r) => r.median < 15);
  target('100k items with catalog peak RSS under 1 GB', 100_000, (r) => r.hwm < 1024 * MB);
  if (pollRows.length > 0) {
    printTable(
      `Polls through the gateway at ${pollRate} req/s per endpoint (open loop), idle and ` +
        'while the catalog service ingests',
      pollRows,
    );
    for (const note of pollNotes) process.stdout.write(`${note}\n`);
  }
}

await platform.run(async () => {
  // Ordering compiles each activated version ahead of use, and the gateway streams the GET:
  // their peaks size their pods too (serviceMemory: the largest replica's).
  const { commerce, distribution } = platform.createPartners();
  platform.setRateLimits(commerce, { writes: 100_000, reads: 100_000 });
  platform.setRateLimits(distribution, { reads: 100_000 });

  const baseline = serviceMemory('catalog');
  log(
    `catalog baseline: VmRSS ${round(baseline.rss / MB, 1)} MB, ` +
      `VmHWM ${round(baseline.hwm / MB, 1)} MB`,
  );

  for (const size of sizes) {
    const storeId = await platform.createStore(commerce.apiKey, `Bench Store ${size}`);

    // One document per run (same store, a different seed each), serialized before timing.
    log(`${size} items: generating ${runs} document(s)`);
    const paths = [];
    for (let run = 1; run <= runs; run++) {
      const path = `/catalogsets/${size}/${run}.json`;
      const doc = generateCatalogSet({ storeId, items: size, seed: run });
      platform.documents.set(path, Buffer.from(JSON.stringify(doc)));
      paths.push(path);
    }
    const jsonMb = platform.documents.get(paths[0]).length / MB;

    const times = [];
    // The catalog process's VmRSS, sampled on every status poll.
    let sampledRss = 0;
    for (let run = 0; run < runs; run++) {
      const { seconds, summary } = await platform.ingest(
        storeId,
        platform.documentUrl(paths[run]),
        commerce.apiKey,
        () => (sampledRss = Math.max(sampledRss, serviceMemory('catalog').rss)),
      );
      if (summary && summary.items !== size) {
        throw new Error(`ingest of ${size} items reported ${summary.items} items`);
      }
      times.push(seconds);
      log(`${size} items, run ${run + 1}/${runs}: ${round(seconds, 3)} s`);
    }
    const afterIngest = serviceMemory('catalog');
    const served = await fetchServed(storeId, distribution.apiKey, size);
    const afterGet = serviceMemory('catalog');
    log(
      `${size} items: catalog VmRSS peak sampled while polling ${round(sampledRss / MB, 1)} MB, ` +
        `VmHWM after ingests ${round(afterIngest.hwm / MB, 1)} MB, ` +
        `after GET ${round(afterGet.hwm / MB, 1)} MB; GET served ${round(served.bytes / MB, 2)} MB`,
    );
    for (const path of paths) platform.documents.delete(path);

    const med = median(times);
    const best = Math.min(...times);
    results.set(size, { median: med, best, hwm: afterIngest.hwm });
    rows.push({
      size,
      'JSON MB': round(jsonMb, 2),
      'median s': round(med, 3),
      'best s': round(best, 3),
      'items/s (median)': Math.round(size / med),
      'catalog VmHWM MB': round(afterIngest.hwm / MB, 1),
      'ordering VmHWM MB': round(serviceMemory('ordering').hwm / MB, 1),
      'GET s': round(served.seconds, 3),
      'gateway VmHWM MB': round(serviceMemory('gateway').hwm / MB, 1),
      'If-None-Match': served.revalidateStatus,
    });
    if (served.revalidateStatus !== 304) {
      throw new Error(
        `GET with If-None-Match for ${size} items returned ${served.revalidateStatus}, not 304`,
      );
    }
  }
  if (pollSize > 0) await measureResponsiveness({ commerce, distribution });
  log(
    `catalog baseline before the first ingest: VmRSS ${round(baseline.rss / MB, 1)} MB, ` +
      `VmHWM ${round(baseline.hwm / MB, 1)} MB`,
  );
  printReport();
}, printReport);
