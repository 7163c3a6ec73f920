// CatalogSet ingest through gateway → NATS → catalog worker → Postgres: notify-to-succeeded
// time per document size, items/s, peak RSS and the GET back; then whether the catalog
// service keeps answering (status polls, another store's reads) while it ingests.
import { performance } from 'node:perf_hooks';
import { memoryOf } from '@pcp/platform';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { fail, log } from '@pcp/setup';
import { envNumber, median, sleep } from '../helpers.js';
import { pacedLoad, type LoadResult } from '../load/paced-load.js';
import { BenchPlatform, type Partner } from '../platform/bench-platform.js';

import { printTable, type Row } from '../report.js';

/** Items of the other store's CatalogSet that is read while the large ingest runs. */
const READ_DOCUMENT_ITEMS = 200;
/** The bench's own wait for the large ingest polls this often (on top of the paced polls). */
const OUTCOME_POLL_MS = 250;
const MB = 1024 * 1024;

const round = (value: number, digits: number) => Number(value.toFixed(digits));

interface Partners {
  commerce: Partner;
  distribution: Partner;
}

export async function run(): Promise<void> {
  const sizes = (process.env.BENCH_SIZES ?? '1000,10000,100000')
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
  const runs = envNumber('BENCH_RUNS', 3);
  const port = envNumber('BENCH_PORT', 18081);
  const pollSize = envNumber('BENCH_POLL_SIZE', 100_000);
  const pollRate = envNumber('BENCH_POLL_RATE', 20);
  const pollSeconds =
    process.env.BENCH_SECONDS === undefined ? undefined : Number(process.env.BENCH_SECONDS);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1) {
    fail(new Error('BENCH_SIZES must be positive integers and BENCH_RUNS a positive integer'));
  }
  if (
    !Number.isInteger(pollSize) ||
    pollSize < 0 ||
    !(pollRate > 0) ||
    (pollSeconds !== undefined && !(pollSeconds > 0))
  ) {
    fail(
      new Error(
        'BENCH_POLL_SIZE must be an integer >= 0, BENCH_POLL_RATE and BENCH_SECONDS positive',
      ),
    );
  }

  const platform = await BenchPlatform.create({ port, serveDocuments: true });

  /** The largest VmRSS and VmHWM among a service's processes (its replicas). */
  function serviceMemory(service: string) {
    const memories = platform.pidsOf(service).map((pid) => {
      const memory = memoryOf(pid);
      if (!memory) throw new Error(`cannot read /proc/${pid}/status (has ${service} exited?)`);
      return memory;
    });
    return {
      rss: Math.max(...memories.map((memory) => memory.rssBytes)),
      hwm: Math.max(...memories.map((memory) => memory.peakRssBytes)),
    };
  }

  /** Time to GET the served CatalogSet in full; then If-None-Match with its ETag. */
  async function fetchServed(storeId: string, apiKey: string, expectedItems: number) {
    const url = platform.url(`/v1/marketfront/stores/${storeId}/catalogset`);
    const headers = { authorization: `Bearer ${apiKey}` };
    const started = performance.now();
    const response = await fetch(url, { headers });
    const body = Buffer.from(await response.arrayBuffer());
    const seconds = (performance.now() - started) / 1000;
    if (response.status !== 200) {
      throw new Error(`GET ${url}: ${response.status} ${body.toString('utf8', 0, 2000)}`);
    }
    const served = Object.keys(
      (JSON.parse(body.toString('utf8')) as { items: object }).items,
    ).length;
    if (served !== expectedItems) {
      throw new Error(`GET ${url} served ${served} items, expected ${expectedItems}`);
    }
    const etag = response.headers.get('etag');
    if (!etag) throw new Error(`GET ${url} carried no ETag`);
    const again = await fetch(url, { headers: { ...headers, 'if-none-match': etag } });
    await again.arrayBuffer();
    return { seconds, bytes: body.length, revalidateStatus: again.status };
  }

  const rows: Row[] = [];
  const results = new Map<number, { median: number; best: number; hwm: number }>();
  const pollRows: Row[] = [];
  const pollNotes: string[] = [];

  /** Poll a run until it is terminal; seconds since `started` when it succeeded. */
  async function waitSucceeded(statusUrl: string, apiKey: string, started: number) {
    for (;;) {
      const status = await platform.request<{ status: string; errors?: unknown }>(
        'GET',
        statusUrl,
        apiKey,
      );
      if (status.status === 'succeeded') return (performance.now() - started) / 1000;
      if (status.status === 'failed') {
        throw new Error(`ingest ${statusUrl} failed:\n${JSON.stringify(status.errors, null, 2)}`);
      }
      await sleep(OUTCOME_POLL_MS);
    }
  }

  /** Status polls and reads of another store's CatalogSet, each paced at `pollRate`. */
  function pollBoth(statusUrl: string, readerStoreId: string, partners: Partners, seconds: number) {
    const paced = (path: string, apiKey: string) =>
      pacedLoad({
        url: platform.url(path),
        headers: { authorization: `Bearer ${apiKey}` },
        rate: pollRate,
        seconds,
      });
    return Promise.all([
      paced(statusUrl, partners.commerce.apiKey),
      paced(`/v1/marketfront/stores/${readerStoreId}/catalogset`, partners.distribution.apiKey),
    ]);
  }

  function pollRow(phase: string, endpoint: string, result: LoadResult): Row {
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

  /** Ingest each size `runs` times; a row per size. */
  async function measureSize(size: number, { commerce, distribution }: Partners) {
    const storeId = await platform.createStore(commerce.apiKey, `Bench Store ${size}`);
    // One document per run (same store, a different seed each), serialized before timing.
    log(`${size} items: generating ${runs} document(s)`);
    const paths: string[] = [];
    for (let run = 1; run <= runs; run++) {
      const path = `/catalogsets/${size}/${run}.json`;
      const doc = generateCatalogSet({ storeId, items: size, seed: run });
      platform.documents.set(path, Buffer.from(JSON.stringify(doc)));
      paths.push(path);
    }
    const jsonMb = platform.documents.get(paths[0]!)!.length / MB;

    const times: number[] = [];
    // The catalog process's VmRSS, sampled on every status poll.
    let sampledRss = 0;
    for (const [run, path] of paths.entries()) {
      const { seconds, summary } = await platform.ingest(
        storeId,
        platform.documentUrl(path),
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

  /**
   * The catalog service's responsiveness while it ingests a `pollSize`-item document: the
   * polls once with nothing running (baseline), then from the notification of the ingest on.
   */
  async function measureResponsiveness(partners: Partners) {
    const { commerce } = partners;
    const readerStoreId = await platform.createStore(commerce.apiKey, 'Bench reader store');
    const readerPath = '/catalogsets/reader.json';
    platform.documents.set(
      readerPath,
      Buffer.from(
        JSON.stringify(generateCatalogSet({ storeId: readerStoreId, items: READ_DOCUMENT_ITEMS })),
      ),
    );
    const reader = await platform.notify(
      readerStoreId,
      platform.documentUrl(readerPath),
      commerce.apiKey,
    );
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
    const [idleStatus, idleReads] = await pollBoth(
      reader.statusUrl,
      readerStoreId,
      partners,
      seconds,
    );
    pollRows.push(pollRow('idle', 'ingest status', idleStatus));
    pollRows.push(pollRow('idle', 'catalogset (other store)', idleReads));

    log(
      `polls at ${pollRate} req/s per endpoint for ${seconds} s: during the ${pollSize}-item ingest`,
    );
    const started = performance.now();
    const accepted = await platform.notify(storeId, platform.documentUrl(path), commerce.apiKey);
    const [[busyStatus, busyReads], ingestSeconds] = await Promise.all([
      pollBoth(accepted.statusUrl, readerStoreId, partners, seconds),
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
    const target = (
      label: string,
      size: number,
      check: (result: { median: number; hwm: number }) => boolean,
    ) => {
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
    const partners = platform.createPartners();
    platform.setRateLimits(partners.commerce, { writes: 100_000, reads: 100_000 });
    platform.setRateLimits(partners.distribution, { reads: 100_000 });

    const baseline = serviceMemory('catalog');
    const baselineText =
      `VmRSS ${round(baseline.rss / MB, 1)} MB, ` + `VmHWM ${round(baseline.hwm / MB, 1)} MB`;
    log(`catalog baseline: ${baselineText}`);
    for (const size of sizes) await measureSize(size, partners);
    if (pollSize > 0) await measureResponsiveness(partners);
    log(`catalog baseline before the first ingest: ${baselineText}`);
    printReport();
  }, printReport);
}
