// Sustained load through the gateway, as a replica would take it for minutes: place, validate,
// GET store and the replay of a placed key, BENCH_PHASE_SECONDS (150) each with
// BENCH_CONNECTIONS (50) always in flight; then each process's peak RSS (VmHWM) against the
// memory limit its Kubernetes manifest gives it. A process above 80 % of its base limit fails
// the bench. Each service runs with the heap flags its manifest's NODE_OPTIONS sets (sized
// from the limit, as Node sizes them in the container) and the image's instrumentation.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { platformServices, type PlatformProcess } from '@pcp/contracts';
import { memoryOf } from '@pcp/platform';
import { fail, log } from '@pcp/setup';
import { generateCatalogSet } from '@pcp/testing/catalog-generator';
import { alwaysOpen, buildLines, openAllWeek } from '../../cart-builder.js';
import { envNumber, sleep } from '../../helpers.js';
import { cpuLoadRow, cpuMeter } from '../../load/cpu.js';
import { peakLoad, type LoadTarget } from '../../load/paced-load.js';
import { BenchPlatform } from '../../platform/bench-platform.js';
import { printTable, recordResult, type Row } from '../../report.js';
import { seedStores } from '../discovery/stores.js';
import { failing, heapFlags, LIMIT_SHARE, limitRows } from './limits.js';
import { manifestLimits, PRODUCTION_OVERLAY } from './manifests.js';

const PHASES = ['place', 'validate', 'store', 'replay'] as const;
type Phase = (typeof PHASES)[number];
const PROCESSES: readonly PlatformProcess[] = [...platformServices, 'processor-simulator'];
const PROCESSOR_LATENCY_MS = 20;
const SAMPLE_MS = 1_000;
const MiB = 1024 ** 2;

/**
 * The largest of a process's replicas (each would be a pod of its own; a gateway cluster's
 * workers too), in bytes.
 */
const largestOf = (pids: readonly number[], field: 'rssBytes' | 'peakRssBytes') =>
  Math.max(0, ...pids.map((pid) => memoryOf(pid)?.[field] ?? 0));

/** The Node memory figures of a service's /metrics (prom-client's default metrics), in MiB. */
async function heapOf(platform: BenchPlatform, name: PlatformProcess): Promise<Row | undefined> {
  const [url] = platform.opsUrls(name, '/metrics');
  if (url === undefined) return undefined;
  const text = await (await fetch(url)).text();
  // The simulator has no metrics of its own.
  if (!text.includes('process_resident_memory_bytes')) return undefined;
  const value = (metric: string) => {
    const match = new RegExp(`^${metric}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
    return match ? Math.round(Number(match[1]) / MiB) : undefined;
  };
  // Every kind of collection's time since the process started: what the heap's size costs.
  const gcSeconds = [...text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
  return {
    'RSS MiB': value('process_resident_memory_bytes'),
    'heap used MiB': value('nodejs_heap_size_used_bytes'),
    'heap total MiB': value('nodejs_heap_size_total_bytes'),
    'external MiB': value('nodejs_external_memory_bytes'),
    'GC s since start': Math.round(gcSeconds * 100) / 100,
  };
}

export async function run(): Promise<void> {
  const phaseSeconds = envNumber('BENCH_PHASE_SECONDS', 150);
  const connections = envNumber('BENCH_CONNECTIONS', 50);
  const port = envNumber('BENCH_PORT', 18140);
  const storeCount = envNumber('BENCH_STORES', 10_000);
  const only = (process.env.BENCH_ONLY ?? PHASES.join(',')).split(',').map((name) => name.trim());
  if (!(phaseSeconds > 0) || !Number.isInteger(connections) || connections < 1) {
    fail(new Error('BENCH_PHASE_SECONDS must be positive, BENCH_CONNECTIONS a positive integer'));
  }
  if (only.length === 0 || only.some((name) => !(PHASES as readonly string[]).includes(name))) {
    fail(new Error(`BENCH_ONLY lists some of ${PHASES.join(', ')}`));
  }
  const limits = manifestLimits(PROCESSES);
  // Each service's heap flags from its manifest, sized from the base limit as in its container.
  const serviceEnv: Partial<Record<PlatformProcess, Record<string, string>>> = {};
  const flagsTable: Row[] = [];
  for (const name of PROCESSES) {
    const base = limits.base.get(name);
    if (!base) continue;
    const flags = heapFlags(base.nodeOptions, base.limitBytes);
    if (flags.length > 0) serviceEnv[name] = { NODE_OPTIONS: flags.join(' ') };
    flagsTable.push({
      process: name,
      'manifest NODE_OPTIONS': base.nodeOptions ?? '',
      'run with': flags.join(' ') || '(V8 defaults)',
    });
  }

  const platform = await BenchPlatform.create({
    port,
    serveDocuments: true,
    processorLatencyMs: PROCESSOR_LATENCY_MS,
    serviceEnv,
    instrument: true,
  });
  const withCpu = cpuMeter(platform);
  const loadRows: Row[] = [];
  const heapRows: Row[] = [];
  const phasePeaks: Row[] = [];

  let printed = false;
  const printAll = () => {
    if (printed) return;
    printed = true;
    printTable('Heap flags from the manifests (deploy/k8s/base)', flagsTable);
    if (loadRows.length > 0) {
      printTable(
        `Sustained load, ${connections} connections, ${phaseSeconds} s per phase`,
        loadRows,
      );
    }
    if (phasePeaks.length > 0) printTable('Largest RSS sampled per phase (MiB)', phasePeaks);
    if (heapRows.length > 0) {
      printTable('Node memory at the end of each phase (MiB, from /metrics)', heapRows);
    }
  };

  await platform.run(
    async () => {
      const { commerce, distribution } = platform.createPartners();
      platform.setRateLimits(commerce, { writes: 1_000_000, reads: 1_000_000 });
      platform.setRateLimits(distribution, { reads: 1_000_000, writes: 1_000_000 });
      const storeId = await platform.createStore(commerce.apiKey, 'Bench Memory Store', {
        availability: alwaysOpen,
        orderSubmissionUrl: null,
      });
      const doc = generateCatalogSet({ storeId, items: 2_000, seed: 2, modifierDepth: 2 });
      openAllWeek(doc);
      platform.documents.set('/catalogset.json', Buffer.from(JSON.stringify(doc)));
      await platform.ingest(storeId, platform.documentUrl('/catalogset.json'), commerce.apiKey);
      platform.documents.delete('/catalogset.json');
      log(`seeding ${storeCount} stores`);
      await seedStores(platform, commerce.partnerId, storeCount);
      const client = await platform.connectDatabase({ options: '-c search_path=stores' });
      const { rows } = await client
        .query<{ store_id: string }>('select store_id from stores where partner_id = $1', [
          commerce.partnerId,
        ])
        .finally(() => client.end());

      const headers = {
        authorization: `Bearer ${distribution.apiKey}`,
        'content-type': 'application/json',
      };
      const endUser = { ...headers, 'x-end-user-id': 'bench-memory-user' };
      const paymentId = await platform.vaultCard(distribution, 'bench-memory-user');
      const { lines } = buildLines(doc, 5);
      const cart = { catalogSetId: doc.catalogSetId, storeId, lineItems: lines };
      const order = {
        cart,
        fulfillment: { mode: 'PICKUP', scheduleType: 'ASAP' },
        client: { ip: '8.8.4.4', userAgent: 'bench-memory/1.0' },
        paymentType: 'CARD',
        tip: 2,
      };
      const validateUrl = platform.url('/v1/marketfront/orders/validate');
      const validated = await fetch(validateUrl, {
        method: 'POST',
        headers,
        body: JSON.stringify(order),
      });
      const { amounts } = (await validated.json()) as { amounts: { total: number } };
      const placeUrl = platform.url('/v1/marketfront/orders/place');
      const placeBody = Buffer.from(JSON.stringify({ ...order, paymentId, amounts }));
      const replayKey = randomUUID();
      const placed = await fetch(placeUrl, {
        method: 'POST',
        headers: { ...endUser, 'idempotency-key': replayKey },
        body: placeBody,
      });
      if (placed.status !== 201) {
        throw new Error(`place: ${placed.status} ${(await placed.text()).slice(0, 2000)}`);
      }

      const targets: Record<Phase, LoadTarget> = {
        place: {
          url: placeUrl,
          method: 'POST',
          headers: endUser,
          body: placeBody,
          keyHeader: 'idempotency-key',
        },
        validate: { url: validateUrl, method: 'POST', headers, body: JSON.stringify(order) },
        store: {
          url: platform.url('/'),
          paths: rows.map(({ store_id }) => `/v1/marketfront/stores/${store_id}`),
          headers: { authorization: headers.authorization },
        },
        replay: {
          url: placeUrl,
          method: 'POST',
          headers: { ...endUser, 'idempotency-key': replayKey },
          body: placeBody,
        },
      };
      const cpuOf = ['gateway', 'ordering', 'payments', 'stores', 'nats', 'postgres'];
      for (const phase of PHASES.filter((name) => only.includes(name))) {
        log(`${phase}: ${connections} connections for ${phaseSeconds} s`);
        const largest = new Map<string, number>();
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            for (const name of PROCESSES) {
              const rss = largestOf(platform.pidsOf(name), 'rssBytes');
              largest.set(name, Math.max(largest.get(name) ?? 0, rss));
            }
            await sleep(SAMPLE_MS);
          }
        })();
        const started = performance.now();
        const result = await withCpu(cpuOf, () =>
          peakLoad({ ...targets[phase], connections, seconds: phaseSeconds }),
        ).finally(() => {
          sampling = false;
        });
        await sampler;
        log(
          `${phase}: ${Math.round((performance.now() - started) / 1000)} s, ${result.achievedRate} req/s`,
        );
        if (result.firstFailure) log(`${phase}: first failure: ${result.firstFailure}`);
        loadRows.push(cpuLoadRow(`${phase} (${connections} connections)`, 'max', result));
        phasePeaks.push({
          phase,
          ...Object.fromEntries(
            [...largest].map(([name, bytes]) => [name, Math.round(bytes / MiB)]),
          ),
        });
        for (const name of PROCESSES) {
          const heap = await heapOf(platform, name).catch(() => undefined);
          if (heap) heapRows.push({ phase, process: name, ...heap });
        }
      }

      printAll();
      const peaks = new Map(
        PROCESSES.map((name) => [name as string, largestOf(platform.pidsOf(name), 'peakRssBytes')]),
      );
      const rowsAgainstLimits = limitRows(peaks, limits);
      const title =
        `Peak RSS (VmHWM) against the manifests' memory limits: FAIL above ` +
        `${Math.round(LIMIT_SHARE * 100)} % of the base limit (deploy/k8s/base); production ` +
        (limits.production ? `from ${PRODUCTION_OVERLAY}` : 'not rendered (no kubectl)');
      process.stdout.write(`\n${title}\n`);
      console.table(rowsAgainstLimits);
      recordResult({ kind: 'limits', title, rows: rowsAgainstLimits as unknown as Row[] });
      const failed = failing(rowsAgainstLimits);
      if (failed.length > 0) {
        throw new Error(
          `above ${Math.round(LIMIT_SHARE * 100)} % of the base memory limit: ` +
            failed
              .map(
                (row) => `${row.process} ${row['peak RSS MiB']} MiB (${row['% of base limit']} %)`,
              )
              .join(', '),
        );
      }
    },
    () => printAll(),
  );
}
