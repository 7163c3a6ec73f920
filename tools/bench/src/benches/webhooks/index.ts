// Order-status webhook delivery by the ordering service: synthetic events published straight
// to JetStream, open loop, to healthy partners' receivers (phase 1, and 1b again as the
// control), then with a partner whose endpoint hangs (phase 2); last the webhook floor takes
// phase 1's load. Targets: 1,000 deliveries/s with p99 lag < 1 s (phase 1), and the failing
// partner changing the healthy partners' p99 lag by less than 10 % (phase 2 against 1).
import { connect, type NatsConnection } from 'nats';
import { Webhook } from 'standardwebhooks';
import { fail, log, serverUrls } from '@pcp/setup';
import { startWebhookFloor } from '../../floors/webhook-floor.js';
import { envNumber, round2, sleep } from '../../helpers.js';
import { cpuColumns, cpuMeter, type CpuFigures } from '../../load/cpu.js';
import { BenchPlatform } from '../../platform/bench-platform.js';
import { Report, type Row } from '../../report.js';
import { check, type Checked, type WebhookPartner } from './check.js';
import { newOrders, ORDER_EVENTS, plan, publishPaced, type BenchEvent } from './events.js';
import { startReceivers, type Receivers } from './receivers.js';
import { nowMs } from './receivers.worker.js';

const TARGET_RATE = 1_000;
const TARGET_P99_MS = 1_000;
/** The failing partner may change the healthy partners' p99 lag by less than this share. */
const TARGET_P99_CHANGE = 0.1;
/** The failing partner's orders in phase 2, as a share of the healthy partners'. */
const FAILING_SHARE = 0.1;
/** A phase fails when its healthy events have not all arrived this long after its last publish. */
const DRAIN_TIMEOUT_MS = 120_000;
const POLL_MS = 50;
/** Every this many deliveries to a receiver, one has its signature verified. */
const SAMPLE_EVERY = 50;

interface Settings {
  rate: number;
  orderCount: number;
  versions: number;
  partnerCount: number;
  maxInFlight: number;
  webhookTimeoutMs: number;
}

type Counters = Record<
  'attempts' | 'delivered' | 'retry' | 'postponed' | 'dead' | 'gone' | 'deadLettered',
  number
>;
/** The bench database's own work over a phase (pg_stat_database, this database only). */
interface DatabaseWork {
  /** Transactions committed or rolled back. */
  transactions: number;
  /** Rows inserted, updated or deleted. */
  rowsWritten: number;
}
type PhaseResult = Checked & {
  publish: Awaited<ReturnType<typeof publishPaced>>;
  counters: Counters;
  database?: DatabaseWork;
} & Partial<CpuFigures>;

interface Partner extends WebhookPartner {
  partnerId: string;
  apiKey: string;
  url: string;
  secret: string;
}

function settingsFromEnv(): Settings & { port: number } {
  const settings = {
    rate: envNumber('BENCH_RATE', 1_000),
    orderCount: envNumber('BENCH_ORDERS', 1_000),
    versions: envNumber('BENCH_VERSIONS', 10),
    partnerCount: envNumber('BENCH_PARTNERS', 10),
    port: envNumber('BENCH_PORT', 18113),
    maxInFlight: envNumber('BENCH_MAX_IN_FLIGHT', 8),
    webhookTimeoutMs: envNumber('BENCH_WEBHOOK_TIMEOUT_MS', 2_000),
  };
  const { rate, orderCount, versions, partnerCount, port, maxInFlight, webhookTimeoutMs } =
    settings;
  const positiveInteger = (value: number) => Number.isInteger(value) && value > 0;
  if (
    !(rate > 0) ||
    ![orderCount, versions, partnerCount, port, maxInFlight].every(positiveInteger) ||
    !(Number.isInteger(webhookTimeoutMs) && webhookTimeoutMs >= 100)
  ) {
    fail(
      new Error(
        'BENCH_RATE must be positive; BENCH_ORDERS, BENCH_VERSIONS, BENCH_PARTNERS, BENCH_PORT ' +
          'and BENCH_MAX_IN_FLIGHT positive integers; BENCH_WEBHOOK_TIMEOUT_MS an integer >= 100',
      ),
    );
  }
  return settings;
}

/** A phase's deliveries to the healthy partners as console.table columns. */
const deliveryRow = (run: string, result: PhaseResult): Row => ({
  run,
  'published/s': result.publish.rate,
  delivered: `${result.delivered} of ${result.delivered + result.missing}`,
  'deliveries/s': result.deliveriesPerSecond,
  'p50 ms': result.lag.p50,
  'p90 ms': result.lag.p90,
  'p99 ms': result.lag.p99,
  'max ms': result.lag.max,
  'worst partner p99 ms': result.worstP99,
  // Per try made (the healthy partners' deliveries and the failing partner's tries).
  'pg xacts/try': result.database ? perTry(result, result.database.transactions) : '',
  'pg rows written/try': result.database ? perTry(result, result.database.rowsWritten) : '',
  ...Object.fromEntries(
    Object.entries(cpuColumns(result)).map(([key, value]) => [key, value ?? '']),
  ),
});

const perTry = (result: PhaseResult, count: number) =>
  round2(count / Math.max(1, result.delivered + result.failingTries));

/** A phase's checks, the bench thread's timeliness and ordering's counters. */
const checkRow = (run: string, result: PhaseResult): Row => ({
  run,
  duplicates: result.duplicates,
  'out of order': result.outOfOrder,
  'payload mismatches': result.mismatches + result.unknown,
  'signatures verified': `${result.signatures.verified} of ${result.signatures.sampled}`,
  'publish late p99/max ms': `${result.publish.lateness.p99} / ${result.publish.lateness.max}`,
  'receivers loop delay p99/max ms': `${round2(result.loopDelay.p99)} / ${round2(result.loopDelay.max)}`,
  'failing partner tries': result.failingTries,
  'ordering: attempts': result.counters.attempts,
  delivered: result.counters.delivered,
  retry: result.counters.retry,
  postponed: result.counters.postponed,
  dead: result.counters.dead,
});

const percentChange = (from: number, to: number) => {
  const change = round2((100 * (to - from)) / from);
  return `${change >= 0 ? '+' : ''}${change} %`;
};

export async function run(): Promise<void> {
  const { port, ...settings } = settingsFromEnv();
  const platform = await BenchPlatform.create({
    port,
    serviceEnv: {
      ordering: {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_MAX_IN_FLIGHT_PER_PARTNER: String(settings.maxInFlight),
        WEBHOOK_TIMEOUT_MS: String(settings.webhookTimeoutMs),
      },
    },
  });
  const report = new Report();
  await platform.run(
    async () => {
      const receivers = await startReceivers(settings.partnerCount + 1, SAMPLE_EVERY);
      const nc = await connect({ servers: serverUrls.nats, noAsyncTraces: true });
      try {
        await benchmark(platform, report, settings, receivers, nc);
      } finally {
        await receivers.close();
        await nc.close();
      }
    },
    () => report.print(),
  );
}

/** Ordering's webhook counters (every replica's /metrics), summed over matching samples. */
async function orderingCounters(platform: BenchPlatform): Promise<Counters> {
  const texts = await Promise.all(
    platform.opsUrls('ordering', '/metrics').map(async (url) => (await fetch(url)).text()),
  );
  const lines = texts.join('\n').split('\n');
  const sum = (name: string, match = '') =>
    lines
      .filter((line) => new RegExp(`^(\\w+_)?${name}[{ ]`).test(line) && line.includes(match))
      .reduce((total, line) => total + Number(line.split(' ').at(-1)), 0);
  const outcome = (name: string) => sum('pcp_webhook_deliveries_total', `outcome="${name}"`);
  return {
    attempts: sum('pcp_webhook_delivery_attempts_total'),
    delivered: outcome('delivered'),
    retry: outcome('retry'),
    postponed: outcome('postponed'),
    dead: outcome('dead'),
    gone: outcome('gone'),
    deadLettered: sum('consumer_messages_total', 'outcome="dead_lettered"'),
  };
}

/** The bench database's transactions and rows written so far (the stats lag up to a second). */
async function databaseWork(platform: BenchPlatform): Promise<DatabaseWork> {
  const client = await platform.connectDatabase();
  try {
    const { rows } = await client.query<{ transactions: string; rows_written: string }>(
      `select xact_commit + xact_rollback as transactions,
              tup_inserted + tup_updated + tup_deleted as rows_written
         from pg_stat_database where datname = current_database()`,
    );
    return {
      transactions: Number(rows[0]!.transactions),
      rowsWritten: Number(rows[0]!.rows_written),
    };
  } finally {
    await client.end();
  }
}

const counterChange = (before: Counters, after: Counters) =>
  Object.fromEntries(
    Object.entries(after).map(([key, value]) => [key, value - before[key as keyof Counters]]),
  ) as Counters;

/** The partners (the last one failing), each with an endpoint on its receiver. */
async function registerPartners(
  platform: BenchPlatform,
  partnerCount: number,
  receivers: Receivers,
): Promise<Partner[]> {
  log(`creating ${partnerCount} healthy distribution partners and a failing one`);
  const partners: Partner[] = [];
  for (let index = 0; index <= partnerCount; index++) {
    const failing = index === partnerCount;
    const name = failing ? 'bench webhooks failing' : `bench webhooks ${index + 1}`;
    const partner = platform.admin('create-partner', '--kind', 'distribution', '--name', name);
    const url = `http://127.0.0.1:${receivers.ports[index]}/webhooks`;
    const response = await fetch(platform.url('/v1/marketfront/webhooks'), {
      method: 'PUT',
      headers: { authorization: `Bearer ${partner.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, events: ORDER_EVENTS }),
    });
    const text = await response.text();
    let secret: unknown;
    try {
      secret = (JSON.parse(text) as { secret?: unknown }).secret;
    } catch {
      // reported below
    }
    if (response.status !== 201 || typeof secret !== 'string' || !secret.startsWith('whsec_')) {
      throw new Error(
        `PUT /v1/marketfront/webhooks for ${name} answered ${response.status} ` +
          `(expected 201 with a whsec_ secret): ${text.slice(0, 2000)}`,
      );
    }
    partners.push({ ...partner, name, url, secret, failing, webhook: new Webhook(secret) });
  }
  return partners;
}

async function benchmark(
  platform: BenchPlatform,
  report: Report,
  { rate, orderCount, versions, partnerCount, maxInFlight, webhookTimeoutMs }: Settings,
  receivers: Receivers,
  nc: NatsConnection,
): Promise<void> {
  const js = nc.jetstream();
  const subject = `${platform.subjectPrefix}.events.ordering.v1.order-status-changed`;
  const withCpu = cpuMeter(platform);
  const platformCpu = ['gateway', 'ordering', 'nats', 'postgres'];
  const partners = await registerPartners(platform, partnerCount, receivers);
  const partnerIds = partners.map((partner) => partner.partnerId);
  const healthyOrders = (count: number) => newOrders(count, (index) => index % partnerCount);
  const failingOrders = (count: number) => newOrders(count, () => partnerCount);
  /** Every event published so far, by id: a late duplicate of an earlier phase is known. */
  const published = new Map<string, BenchEvent>();

  /** Publish a phase's events, wait for every healthy one at its receiver, and check them. */
  async function runPhase(
    label: string,
    events: BenchEvent[],
    perSecond: number,
    target = subject,
  ): Promise<PhaseResult> {
    const healthy = events.filter((event) => !partners[event.partner]!.failing);
    await receivers.ask({ type: 'phase', expected: healthy.map((event) => event.id) });
    const before = await orderingCounters(platform);
    log(`${label}: publishing ${events.length} events at ${round2(perSecond)}/s`);
    const publish = await publishPaced(js, target, events, perSecond, published);
    const deadline = nowMs() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const status = await receivers.ask({ type: 'status' });
      if (status.arrived === healthy.length) break;
      if (nowMs() > deadline) {
        // What did arrive is reported (the bench fails after it is printed).
        const partial = {
          publish,
          counters: counterChange(before, await orderingCounters(platform)),
          ...check(partners, events, published, await receivers.ask({ type: 'end' })),
        };
        addRows(`${label}, as far as it got`, partial);
        throw new Error(
          `${label}: ${status.arrived} of ${healthy.length} healthy events arrived ` +
            `${DRAIN_TIMEOUT_MS / 1000} s after the last publish; ordering's counters over ` +
            `the phase: ${JSON.stringify(partial.counters)}`,
        );
      }
      await sleep(POLL_MS);
    }
    const received = await receivers.ask({ type: 'end' });
    // The last deliveries' settling (and counting) follows their answers closely.
    await sleep(250);
    const counters = counterChange(before, await orderingCounters(platform));
    return { publish, counters, ...check(partners, events, published, received) };
  }

  const deliveryRows: Row[] = [];
  const checkRows: Row[] = [];
  /** A phase's rows, reported as soon as it ends, so a later failure still prints them. */
  function addRows(run: string, result: PhaseResult) {
    if (deliveryRows.length === 0) {
      report.table(
        `The healthy partners' deliveries (lag from the event's scheduled publish to its arrival)`,
        deliveryRows,
      );
      report.table(
        'Checks at the receivers, the bench thread and ordering’s counters over the phase',
        checkRows,
      );
    }
    deliveryRows.push(deliveryRow(run, result));
    checkRows.push(checkRow(run, result));
  }

  const failingCount = Math.max(1, Math.round(orderCount * FAILING_SHARE));
  const warmOrders = Math.max(partnerCount, Math.round(orderCount / 5));
  const phase2Rate = (rate * (orderCount + failingCount)) / orderCount;
  report.table('Set-up', [
    {
      'healthy partners': partnerCount,
      'orders × versions': `${orderCount} × ${versions}`,
      'events/phase (healthy)': orderCount * versions,
      'failing partner (phase 2)': `${failingCount} orders, ${failingCount * versions} events, hangs`,
      'rate/s (phase 1, phase 2)': `${rate}, ${round2(phase2Rate)}`,
      'ordering env': `WEBHOOK_MAX_IN_FLIGHT_PER_PARTNER=${maxInFlight} WEBHOOK_TIMEOUT_MS=${webhookTimeoutMs}`,
      receivers: `a worker thread, ${partnerCount + 1} ports`,
    },
  ]);

  log(`warm-up: ${warmOrders} orders × ${versions} versions at ${rate / 2}/s`);
  const warm = await runPhase(
    'warm-up',
    plan(partnerIds, versions, healthyOrders(warmOrders)),
    rate / 2,
  );
  log(`warm-up: p99 lag ${warm.lag.p99} ms, ${warm.deliveriesPerSecond} deliveries/s`);

  const measured = async (
    label: string,
    events: BenchEvent[],
    perSecond: number,
    cpu = platformCpu,
    target = subject,
  ) => {
    const before = await databaseWork(platform);
    const result = await withCpu(cpu, () => runPhase(label, events, perSecond, target));
    // Backends report their counters at most once a second (and when idle); outside the CPU
    // figures' wall time.
    await sleep(1_000);
    const after = await databaseWork(platform);
    const database = {
      transactions: after.transactions - before.transactions,
      rowsWritten: after.rowsWritten - before.rowsWritten,
    };
    return { ...result, database };
  };
  const healthyOnly = await measured(
    'phase 1 (healthy only)',
    plan(partnerIds, versions, healthyOrders(orderCount)),
    rate,
  );
  addRows('1. healthy only', healthyOnly);
  const again = await measured(
    'phase 1b (healthy only, again)',
    plan(partnerIds, versions, healthyOrders(orderCount)),
    rate,
  );
  addRows('1b. healthy only, again', again);
  const withFailing = await measured(
    'phase 2 (with the failing partner)',
    plan(partnerIds, versions, healthyOrders(orderCount), failingOrders(failingCount)),
    phase2Rate,
  );
  addRows('2. with the failing partner', withFailing);

  log('floor: JetStream → insert → signed POST → update → ack, nothing else');
  const floorSubject = await startWebhookFloor(
    platform,
    Object.fromEntries(partners.map(({ partnerId, url, secret }) => [partnerId, { url, secret }])),
  );
  const floor = await measured(
    'floor (healthy only)',
    plan(partnerIds, versions, healthyOrders(orderCount)),
    rate,
    ['webhook-floor', 'nats', 'postgres'],
    floorSubject,
  );
  addRows('floor: the same events, the I/O alone', floor);

  const phases: [string, PhaseResult][] = [
    ['1. healthy only', healthyOnly],
    ['1b. healthy only, again', again],
    ['2. with the failing partner', withFailing],
  ];
  const p1 = healthyOnly.lag.p99;
  const p2 = withFailing.lag.p99;
  const controlP99 = again.lag.p99;
  const rateMet = rate >= TARGET_RATE && healthyOnly.deliveriesPerSecond >= TARGET_RATE * 0.99;
  const phase1Met = rateMet && p1 < TARGET_P99_MS;
  const phase2Met = Math.abs((p2 - p1) / p1) < TARGET_P99_CHANGE;
  report.verdicts.push(
    `phase 1 (healthy only) at ${rate} events/s: ${healthyOnly.deliveriesPerSecond} deliveries/s, ` +
      `p99 lag ${p1} ms → target (${TARGET_RATE} deliveries/s (within 1 %), p99 < ${TARGET_P99_MS} ms) ` +
      `${phase1Met ? 'MET' : 'NOT MET'}${rate < TARGET_RATE ? ` (offered only ${rate}/s)` : ''}`,
    `phase 2 (with the failing partner): the healthy partners' p99 lag ${p2} ms against ${p1} ms ` +
      `(${percentChange(p1, p2)}) → target (a change under ${100 * TARGET_P99_CHANGE} %) ` +
      `${phase2Met ? 'MET' : 'NOT MET'}; without it, phase 1b moved it to ${controlP99} ms ` +
      `(${percentChange(p1, controlP99)}; against 1b: ${percentChange(controlP99, p2)})`,
    `the failing partner got ${withFailing.failingTries} tries in phase 2 (ordering: ` +
      `${withFailing.counters.retry} retries scheduled, ${withFailing.counters.postponed} ` +
      `postponed by its breaker, ${withFailing.counters.dead} dead)`,
  );
  const problems = phases.flatMap(([run, result]) =>
    result.problems.map((problem) => `${run}: ${problem}`),
  );
  const checked = phases.every(
    ([, result]) =>
      result.missing === 0 &&
      result.outOfOrder === 0 &&
      result.mismatches === 0 &&
      result.unknown === 0 &&
      result.signatures.verified === result.signatures.sampled &&
      result.signatures.sampled > 0 &&
      result.problems.length === 0,
  );
  report.verdicts.push(
    `checks: every healthy event delivered at least once, none before its predecessor, ` +
      `bodies as published, sampled signatures verified (and a changed body rejected); ` +
      `${phases.reduce((sum, [, result]) => sum + result.duplicates, 0)} duplicates → ` +
      `${checked ? 'OK' : 'FAILED'}`,
    ...problems.slice(0, 10),
  );
  if (problems.length > 10) report.verdicts.push(`… and ${problems.length - 10} more`);
  if (!checked) process.exitCode = 1;
  report.print();
}
