// Store events fanned out by ordering's webhooks (docs/guide/webhooks.md#store-events): each
// store event goes to every one of BENCH_PARTNERS (1,000) subscribed partners. Measured: the
// lag of each event's last delivery (p99 over the events), and in the same run the order
// webhooks' p99 lag, alone and while the fan-outs go out (order events must not wait for them).
// Every delivery is checked at the receiver: once per partner and event, in order per store.
import { events, orderEventKind, storeEventKind } from '@pcp/contracts';
import { keyringFromEnv, seal } from '@pcp/service-kit';
import { fail, log, serverUrls } from '@pcp/setup';
import { connect, type JetStreamClient } from 'nats';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { endpointSecretBinding } from '../../../../services/ordering/src/webhooks/secret-bindings.js';
import { envNumber, round2, sleep } from '../helpers.js';
import { cpuMeter, type CpuFigures } from '../load/cpu.js';
import { latencySummary } from '../load/paced-load.js';
import { BenchPlatform } from '../platform/bench-platform.js';
import { Report } from '../report.js';

/** A phase fails when its deliveries have not all arrived this long after its last publish. */
const DRAIN_TIMEOUT_MS = 180_000;
/** Endpoints seeded per insert. */
const SEED_BATCH = 1_000;

interface Settings {
  partners: number;
  storeEvents: number;
  storeEventIntervalMs: number;
  orderRate: number;
  phaseMs: number;
  port: number;
}

function settingsFromEnv(): Settings {
  const settings = {
    partners: envNumber('BENCH_PARTNERS', 1_000),
    storeEvents: envNumber('BENCH_STORE_EVENTS', 10),
    storeEventIntervalMs: envNumber('BENCH_STORE_EVENT_INTERVAL_MS', 1_000),
    orderRate: envNumber('BENCH_ORDER_RATE', 50),
    phaseMs: envNumber('BENCH_PHASE_MS', 10_000),
    port: envNumber('BENCH_PORT', 18_133),
  };
  const valid =
    Object.values(settings).every((value) => Number.isInteger(value) && value > 0) &&
    settings.partners <= 100_000 &&
    settings.storeEvents <= 1_000 &&
    settings.orderRate <= 2_000;
  if (!valid) {
    fail(
      new Error(
        'BENCH_PARTNERS (1..100000), BENCH_STORE_EVENTS (1..1000), BENCH_STORE_EVENT_INTERVAL_MS, ' +
          'BENCH_ORDER_RATE (1..2000), BENCH_PHASE_MS and BENCH_PORT must be positive integers',
      ),
    );
  }
  return settings;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** One delivery as the receiver got it. */
interface Arrival {
  partner: number;
  id: string;
  at: number;
  type: string;
  storeId: string;
  version: number;
}

/** Every partner's endpoint on one loopback server, told apart by path (`/p/<index>`). */
async function startReceiver(): Promise<{ server: Server; base: string; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = nowMs();
      response.writeHead(204).end();
      const partner = Number(/^\/p\/(\d+)$/.exec(request.url ?? '')?.[1] ?? -1);
      const body = Buffer.concat(chunks).toString('utf8');
      let payload: { type?: string; data?: { storeId?: string; version?: number } } = {};
      try {
        payload = JSON.parse(body) as typeof payload;
      } catch {
        // counted as a mismatch below (no type)
      }
      arrivals.push({
        partner,
        id: String(request.headers['webhook-id']),
        at,
        type: payload.type ?? '',
        storeId: payload.data?.storeId ?? '',
        version: payload.data?.version ?? 0,
      });
      // One partner's deliveries are verified in full (every partner shares its secret).
      if (partner === 0) verifyQueue.push({ body, headers: request.headers });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}`, arrivals };
}
const verifyQueue: { body: string; headers: Record<string, unknown> }[] = [];

/**
 * The partners: the first registered through the gateway (the endpoint and secret as a partner
 * gets them), the others seeded straight into ordering's endpoints table with its sealed
 * secret: registering a thousand partners one admin process at a time would take minutes and
 * measures nothing of the fan-out.
 */
async function registerPartners(
  platform: BenchPlatform,
  count: number,
  base: string,
): Promise<{ partnerIds: string[]; secret: string }> {
  const first = platform.admin('create-partner', '--kind', 'distribution', '--name', 'bench 0');
  const response = await fetch(platform.url('/v1/marketfront/webhooks'), {
    method: 'PUT',
    headers: { authorization: `Bearer ${first.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      url: `${base}/p/0`,
      events: [...orderEventKind.options, ...storeEventKind.options],
    }),
  });
  const registered = (await response.json()) as { secret?: string };
  if (response.status !== 201 || !registered.secret) {
    throw new Error(`PUT /v1/marketfront/webhooks answered ${response.status}`);
  }
  const partnerIds = [first.partnerId];
  const db = await platform.connectDatabase();
  // The services run with the development keyring (the bench sets no SECRETS_KEYS). A sealed
  // secret opens only in its own row, so each seeded endpoint gets the secret sealed for it.
  const keyring = keyringFromEnv({});
  try {
    for (let start = 1; start < count; start += SEED_BATCH) {
      const ids = Array.from({ length: Math.min(SEED_BATCH, count - start) }, () => randomUUID());
      const urls = ids.map((_, offset) => `${base}/p/${start + offset}`);
      const sealed = ids.map((id) =>
        seal(keyring, endpointSecretBinding({ partner_id: id, mode: 'live' }), registered.secret!),
      );
      await db.query(
        `insert into ordering.webhook_endpoints (partner_id, url, events, secret)
         select id, url, $3::text[], secret
           from unnest($1::uuid[], $2::text[], $4::text[]) as seeded(id, url, secret)`,
        [ids, urls, storeEventKind.options, sealed],
      );
      partnerIds.push(...ids);
    }
  } finally {
    await db.end();
  }
  return { partnerIds, secret: registered.secret };
}

/** Order events for partner 0 at `perSecond` for `durationMs`: their ids and publish times. */
async function publishOrders(
  js: JetStreamClient,
  subject: string,
  partnerId: string,
  perSecond: number,
  durationMs: number,
  published: Map<string, number>,
): Promise<void> {
  const intervalMs = 1000 / perSecond;
  const started = nowMs();
  const acks: Promise<unknown>[] = [];
  for (let sent = 0; sent * intervalMs < durationMs; sent++) {
    const wait = started + sent * intervalMs - nowMs();
    if (wait > 0) await sleep(wait);
    const id = randomUUID();
    published.set(id, nowMs());
    const envelope = {
      id,
      type: 'ordering.v1.order-status-changed',
      occurredAt: new Date().toISOString(),
      version: 1,
      data: {
        event: 'order.created',
        orderId: randomUUID(),
        storeId: randomUUID(),
        partnerId,
        state: 'open',
        status: 'pending',
        previousStatus: null,
      },
    };
    acks.push(js.publish(subject, JSON.stringify(envelope), { msgID: id }));
  }
  await Promise.all(acks);
}

/** Store events of one store, versions 1..count, one every `intervalMs`: ids and publish times. */
async function publishStoreEvents(
  js: JetStreamClient,
  subject: string,
  storeId: string,
  count: number,
  intervalMs: number,
): Promise<Map<string, { at: number; version: number }>> {
  const published = new Map<string, { at: number; version: number }>();
  for (let version = 1; version <= count; version++) {
    const id = randomUUID();
    published.set(id, { at: nowMs(), version });
    const envelope = {
      id,
      type: 'stores.v1.store-changed',
      occurredAt: new Date().toISOString(),
      version,
      data: {
        event: 'store.status_changed',
        storeId,
        status: version % 2 === 0 ? 'online' : 'busy',
        reason: null,
        pausedAt: null,
        resumeAt: null,
        extraPrepMinutes: version % 2 === 0 ? null : 15,
        pausedBy: null,
      },
    };
    await js.publish(subject, JSON.stringify(envelope), { msgID: id });
    if (version < count) await sleep(intervalMs);
  }
  return published;
}

async function waitFor(what: string, done: () => boolean): Promise<void> {
  const deadline = nowMs() + DRAIN_TIMEOUT_MS;
  while (!done()) {
    if (nowMs() > deadline)
      throw new Error(`${what}: not all arrived within ${DRAIN_TIMEOUT_MS} ms`);
    await sleep(50);
  }
}

export async function run(): Promise<void> {
  const settings = settingsFromEnv();
  const platform = await BenchPlatform.create({
    port: settings.port,
    serviceEnv: {
      ordering: {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWLIST: '127.0.0.1/32',
        // Unset: the service's default (docs/operations.md).
        ...(process.env.BENCH_STORE_EVENT_CONCURRENCY
          ? { WEBHOOK_STORE_EVENT_CONCURRENCY: process.env.BENCH_STORE_EVENT_CONCURRENCY }
          : {}),
      },
    },
  });
  const report = new Report();
  await platform.run(
    async () => {
      const receiver = await startReceiver();
      const nc = await connect({ servers: serverUrls.nats, noAsyncTraces: true });
      try {
        await benchmark(platform, report, settings, receiver, nc.jetstream());
      } finally {
        receiver.server.closeAllConnections();
        receiver.server.close();
        await nc.close();
      }
    },
    () => report.print(),
  );
}

async function benchmark(
  platform: BenchPlatform,
  report: Report,
  settings: Settings,
  receiver: Awaited<ReturnType<typeof startReceiver>>,
  js: JetStreamClient,
): Promise<void> {
  const { partners, storeEvents, storeEventIntervalMs, orderRate, phaseMs } = settings;
  const orderSubject = `${platform.subjectPrefix}.${events.orderStatusChanged.subject}`;
  const storeSubject = `${platform.subjectPrefix}.${events.storeChanged.subject}`;
  log(`registering 1 distribution partner and seeding ${partners - 1} more endpoints`);
  const { partnerIds, secret } = await registerPartners(platform, partners, receiver.base);
  const { arrivals } = receiver;
  report.table('Set-up', [
    {
      'subscribed partners': partners,
      'store events (one store)': `${storeEvents}, one every ${storeEventIntervalMs} ms`,
      'deliveries of store events': partners * storeEvents,
      'order events (partner 0)': `${orderRate}/s for ${phaseMs} ms, alone then with the fan-outs`,
      replicas: platform.replicas,
    },
  ]);

  const orderLags = (published: Map<string, number>) =>
    arrivals.filter((a) => published.has(a.id)).map((a) => a.at - published.get(a.id)!);

  // Warm-up, not measured: the first deliveries pay for connections, plans and JIT.
  const warm = new Map<string, number>();
  await publishOrders(js, orderSubject, partnerIds[0]!, orderRate, Math.min(phaseMs, 3_000), warm);
  await waitFor('warm-up order events', () => orderLags(warm).length >= warm.size);

  // Where the time goes: the CPU of the processes a delivery passes through, per phase (the
  // receivers run in this process, so its own CPU is the partners' side).
  const withCpu = cpuMeter(platform);
  const platformCpu = ['ordering', 'nats', 'postgres'];

  log('phase 1: order events alone');
  const alone = new Map<string, number>();
  const aloneCpu = await withCpu(platformCpu, async () => {
    await publishOrders(js, orderSubject, partnerIds[0]!, orderRate, phaseMs, alone);
    await waitFor('phase 1 order events', () => orderLags(alone).length >= alone.size);
    return {};
  });
  const aloneLag = latencySummary(orderLags(alone));

  log(`phase 2: ${storeEvents} store events to ${partners} partners, with the order events`);
  const storeId = randomUUID();
  const during = new Map<string, number>();
  const { storePublished, ...duringCpu } = await withCpu(platformCpu, async () => {
    const [published] = await Promise.all([
      publishStoreEvents(js, storeSubject, storeId, storeEvents, storeEventIntervalMs),
      publishOrders(js, orderSubject, partnerIds[0]!, orderRate, phaseMs, during),
    ]);
    await waitFor('phase 2 store deliveries', () => {
      const ids = new Set(
        arrivals.filter((a) => published.has(a.id)).map((a) => `${a.partner}:${a.id}`),
      );
      return ids.size >= partners * storeEvents;
    });
    await waitFor('phase 2 order events', () => orderLags(during).length >= during.size);
    return { storePublished: published };
  });
  const storeArrivals = () => arrivals.filter((a) => storePublished.has(a.id));
  const duringLag = latencySummary(orderLags(during));

  // Checks: each partner got each event once at least, none before its predecessor.
  const seen = new Set<string>();
  const lastVersion = new Map<number, number>();
  let duplicates = 0;
  let outOfOrder = 0;
  let mismatches = 0;
  const lastArrival = new Map<string, number>();
  const allLags: number[] = [];
  for (const arrival of storeArrivals()) {
    const key = `${arrival.partner}:${arrival.id}`;
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    seen.add(key);
    const event = storePublished.get(arrival.id)!;
    if (
      arrival.type !== 'store.status_changed' ||
      arrival.storeId !== storeId ||
      arrival.version !== event.version
    ) {
      mismatches++;
    }
    if (arrival.version !== (lastVersion.get(arrival.partner) ?? 0) + 1) outOfOrder++;
    lastVersion.set(arrival.partner, arrival.version);
    allLags.push(arrival.at - event.at);
    lastArrival.set(arrival.id, Math.max(lastArrival.get(arrival.id) ?? 0, arrival.at));
  }
  const lastLags = [...storePublished].map(([id, { at }]) => lastArrival.get(id)! - at);
  const fanOut = latencySummary(lastLags);
  const each = latencySummary(allLags);
  const first = Math.min(...storeArrivals().map((a) => a.at));
  const last = Math.max(...storeArrivals().map((a) => a.at));
  const webhook = new Webhook(secret);
  let verified = 0;
  for (const sample of verifyQueue) {
    webhook.verify(sample.body, sample.headers as Record<string, string>);
    verified++;
  }

  report.table('Store events: lag from publish to delivery (ms)', [
    {
      measure: "each event's last delivery (of all partners)",
      p50: fanOut.p50,
      p90: fanOut.p90,
      p99: fanOut.p99,
      max: fanOut.max,
    },
    { measure: 'every delivery', p50: each.p50, p90: each.p90, p99: each.p99, max: each.max },
  ]);
  report.table('Order webhooks: lag from publish to delivery (ms)', [
    { run: 'alone', ...aloneLag, delivered: orderLags(alone).length },
    { run: 'during the fan-outs', ...duringLag, delivered: orderLags(during).length },
  ]);
  const cpuRow = (phase: string, cpu: CpuFigures) => ({
    phase,
    'CPU % (1 core = 100)': cpu.serverCpu,
    'bench + receivers CPU %': cpu.loadCpu,
    'machine busy %': cpu.machineBusy,
  });
  report.table('Where the time goes', [
    cpuRow('order events alone', aloneCpu),
    cpuRow('with the fan-outs', duringCpu),
  ]);
  report.table('Checks', [
    {
      'store deliveries': seen.size,
      'deliveries/s': round2((seen.size * 1000) / Math.max(1, last - first)),
      duplicates,
      'out of order': outOfOrder,
      'body mismatches': mismatches,
      'signatures verified (partner 0)': verified,
    },
  ]);
  const checked = outOfOrder === 0 && mismatches === 0 && verified > 0;
  report.verdicts.push(
    `store events to ${partners} partners: p99 lag of an event's last delivery ${fanOut.p99} ms ` +
      `(every delivery: p99 ${each.p99} ms)`,
    `order webhooks' p99 lag ${duringLag.p99} ms during the fan-outs against ${aloneLag.p99} ms alone`,
    `checks: every partner got every store event, in order per store, bodies as published, ` +
      `partner 0's signatures verified; ${duplicates} duplicates → ${checked ? 'OK' : 'FAILED'}`,
  );
  if (!checked) process.exitCode = 1;
  report.print();
}
