// The acceptance sweeper under a burst (docs/benchmarks.md#acceptance): BENCH_ORDERS pending
// card orders whose windows end within BENCH_SPREAD_MS of each other, none accepted. Each has
// a real charge (authorized and captured through payments over NATS, so at the processor
// simulator), and its order written to ordering's database as place leaves it (row, history,
// order.created in the outbox). Measured: how fast every replica's sweeper cancels them, how
// late each is cancelled past its deadline, and how fast their refunds are settled (by
// ordering's refund sweeper through payments at the simulator). Targets: ≥ 200 cancels/s per
// replica, every order cancelled within 30 s of its deadline.
import { orderDetails, TOTAL_MINOR } from '@pcp/testing/order-details';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { eventIdOf } from '@pcp/service-kit';
import { fail, log, serverUrls } from '@pcp/setup';
import { connect, headers as natsHeaders, type NatsConnection } from 'nats';
import type pg from 'pg';
import { envNumber, round2, sleep } from '../helpers.js';
import { cpuMeter, cpus, type CpuFigures } from '../load/cpu.js';
import { latencySummary } from '../load/paced-load.js';
import { BenchPlatform, type Partner } from '../platform/bench-platform.js';
import { clockTicks, cpuTicks } from '../platform/proc.js';
import { Report, type Row } from '../report.js';

const TARGET_RATE = 200;
const TARGET_LATENESS_MS = 30_000;
const CARDS = 50;
/** Charges made at once while seeding. */
const SEED_CONCURRENCY = 32;
/** Orders written per statement while seeding. */
const WRITE_BATCH = 500;
/** The deadlines start this long after the seeded orders' events are published. */
const LEAD_MS = 3_000;
const POLL_MS = 200;
/** A phase fails when it has not ended this long after the last deadline. */
const DRAIN_TIMEOUT_MS = 900_000;
const PROCESSES = ['ordering', 'payments', 'processor-simulator', 'nats', 'postgres'];

interface Seeded {
  orderId: string;
  chargeId: string;
  paymentId: string;
  endUserId: string;
  storeId: string;
}

/** CPU ms per order of `names` (platform processes) over `work`. */
async function cpuMsPer<T>(
  platform: BenchPlatform,
  names: string[],
  count: () => number,
  work: () => Promise<T>,
): Promise<{ result: T; msPer: Record<string, number> }> {
  const ticks = (name: string) =>
    platform.pidsOf(name).reduce((sum, pid) => sum + cpuTicks(pid), 0);
  const before = new Map(names.map((name) => [name, ticks(name)]));
  const result = await work();
  const msPer = Object.fromEntries(
    names.map((name) => [
      name,
      round2(((ticks(name) - before.get(name)!) * 1000) / clockTicks / Math.max(1, count())),
    ]),
  );
  return { result, msPer };
}

/** A payments request as ordering's place sends it; the charge it answers. */
async function paymentsRequest(
  nc: NatsConnection,
  subject: string,
  distribution: Partner,
  endUserId: string,
  body: object,
): Promise<{ chargeId: string; status: string }> {
  const headers = natsHeaders();
  headers.set('X-Request-Id', randomUUID());
  headers.set('Pcp-Partner-Id', distribution.partnerId);
  headers.set('Pcp-Partner-Kind', 'distribution');
  headers.set('Pcp-End-User-Id', endUserId);
  headers.set('Pcp-Payment-Types', 'CARD');
  const reply = await nc.request(subject, Buffer.from(JSON.stringify(body)), {
    headers,
    timeout: 30_000,
  });
  const answer = JSON.parse(Buffer.from(reply.data).toString('utf8')) as {
    chargeId: string;
    status: string;
    errorCode?: string;
  };
  if (reply.headers?.get('Pcp-Reply') !== 'ok') {
    throw new Error(`${subject} answered ${answer.errorCode ?? JSON.stringify(answer)}`);
  }
  return answer;
}

/** Authorize and capture a charge for each of `count` new orders (each order one card's). */
async function makeCharges(
  platform: BenchPlatform,
  nc: NatsConnection,
  distribution: Partner,
  cards: { endUserId: string; paymentId: string }[],
  stores: string[],
  count: number,
): Promise<Seeded[]> {
  const authorize = `${platform.subjectPrefix}.payments.v1.charges.authorize`;
  const capture = `${platform.subjectPrefix}.payments.v1.charges.capture`;
  const seeded: Seeded[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      while (next < count) {
        const index = next++;
        const card = cards[index % cards.length]!;
        const orderId = randomUUID();
        const { chargeId } = await paymentsRequest(nc, authorize, distribution, card.endUserId, {
          orderId,
          paymentId: card.paymentId,
          amount: TOTAL_MINOR,
          currency: 'USD',
          mode: 'live',
        });
        const captured = await paymentsRequest(nc, capture, distribution, card.endUserId, {
          chargeId,
        });
        if (captured.status !== 'captured') throw new Error(`capture left ${captured.status}`);
        seeded.push({ orderId, chargeId, ...card, storeId: stores[index % stores.length]! });
      }
    }),
  );
  return seeded;
}

/**
 * Write the orders as place leaves them (row, version 1 in the history, order.created in the
 * outbox), pending with a deadline an hour away; the burst's deadlines are set once their
 * order.created events are out.
 */
async function writeOrders(
  client: pg.Client,
  prefix: string,
  orders: Seeded[],
  partners: { distribution: Partner; commerce: Partner },
) {
  for (let start = 0; start < orders.length; start += WRITE_BATCH) {
    const now = new Date();
    const acceptBy = new Date(now.getTime() + 3_600_000);
    const estimate = new Date(now.getTime() + 15 * 60_000);
    const rows = orders.slice(start, start + WRITE_BATCH).map((order) => ({
      order_id: order.orderId,
      partner_id: partners.distribution.partnerId,
      end_user_id: order.endUserId,
      store_id: order.storeId,
      store_partner_id: partners.commerce.partnerId,
      mode: 'live',
      fulfillment_mode: 'PICKUP',
      state: 'open',
      status: 'pending',
      version: 1,
      details: orderDetails(order.storeId, 'PICKUP', {
        paymentId: order.paymentId,
        brand: 'VISA',
        last4: '4242',
      }),
      charge_id: order.chargeId,
      total_minor: TOTAL_MINOR,
      currency: 'USD',
      estimated_ready_at: estimate,
      cancel_reason: null,
      accept_by: acceptBy,
      cancelled_by: null,
      store_deleted_at: null,
      created_at: now,
      updated_at: now,
    }));
    const changes = rows.map((row) => ({
      order_id: row.order_id,
      version: 1,
      state: 'open',
      status: 'pending',
      previous_status: null,
      estimated_ready_at: estimate,
      cancel_reason: null,
      cancelled_by: null,
      unavailable_item_ids: null,
      changed_at: now,
    }));
    const events = rows.map((row) => {
      const aggregate = { type: 'order', id: row.order_id, version: 1 };
      const id = eventIdOf(aggregate);
      return {
        event_id: id,
        subject: `${prefix}.events.ordering.v1.order-status-changed`,
        aggregate_type: 'order',
        aggregate_id: row.order_id,
        aggregate_version: 1,
        payload: {
          id,
          type: 'ordering.v1.order-status-changed',
          occurredAt: now.toISOString(),
          version: 1,
          data: {
            event: 'order.created',
            orderId: row.order_id,
            storeId: row.store_id,
            partnerId: row.partner_id,
            storePartnerId: row.store_partner_id,
            state: 'open',
            status: 'pending',
            previousStatus: null,
            estimatedReadyAt: estimate.toISOString(),
            cancelReason: null,
            cancelledBy: null,
          },
        },
      };
    });
    await client.query('begin');
    await client.query(
      `insert into ordering.orders select * from json_populate_recordset(null::ordering.orders, $1)`,
      [JSON.stringify(rows)],
    );
    await client.query(
      `insert into ordering.order_status_changes
       select * from json_populate_recordset(null::ordering.order_status_changes, $1)`,
      [JSON.stringify(changes)],
    );
    await client.query(
      `insert into ordering.outbox
              (event_id, subject, aggregate_type, aggregate_id, aggregate_version, payload)
       select event_id, subject, aggregate_type, aggregate_id, aggregate_version, payload
         from json_populate_recordset(null::ordering.outbox, $1)`,
      [JSON.stringify(events)],
    );
    await client.query('commit');
  }
}

/** Poll `read` until it is true; fails after DRAIN_TIMEOUT_MS. */
async function until(what: string, read: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  while (!(await read())) {
    if (performance.now() > deadline) {
      throw new Error(`${what}: not done ${DRAIN_TIMEOUT_MS / 1000} s after the deadlines`);
    }
    await sleep(POLL_MS);
  }
}

const count = async (client: pg.Client, query: string, values: unknown[]) =>
  Number((await client.query<{ n: string }>(query, values)).rows[0]!.n);

export async function run(): Promise<void> {
  const orderCount = envNumber('BENCH_ORDERS', 6_000);
  const spreadMs = envNumber('BENCH_SPREAD_MS', 1_000);
  const storeCount = envNumber('BENCH_STORES', 20);
  const port = envNumber('BENCH_PORT', 18153);
  const processorLatencyMs = envNumber('BENCH_PROCESSOR_LATENCY_MS', 20);
  const positiveInteger = (value: number) => Number.isInteger(value) && value > 0;
  if (
    ![orderCount, storeCount, port].every(positiveInteger) ||
    !(spreadMs >= 0) ||
    !(processorLatencyMs >= 0)
  ) {
    fail(
      new Error(
        'BENCH_ORDERS, BENCH_STORES and BENCH_PORT must be positive integers, ' +
          'BENCH_SPREAD_MS and BENCH_PROCESSOR_LATENCY_MS at least 0',
      ),
    );
  }
  const platform = await BenchPlatform.create({ port, processorLatencyMs });
  const withCpu = cpuMeter(platform);
  const report = new Report();
  await platform.run(
    async () => {
      const partners = platform.createPartners();
      platform.setRateLimits(partners.commerce, { writes: 100_000, reads: 100_000 });
      platform.setRateLimits(partners.distribution, { reads: 1_000_000, writes: 1_000_000 });
      const stores = [];
      for (let i = 0; i < storeCount; i++) {
        stores.push(await platform.createStore(partners.commerce.apiKey, `Bench Store ${i}`));
      }
      log(`vaulting ${CARDS} cards through the gateway`);
      const cards = await platform.vaultCards(
        partners.distribution,
        CARDS,
        'bench-acceptance-user',
      );
      const nc = await connect({ servers: serverUrls.nats, noAsyncTraces: true });
      const client = await platform.connectDatabase();
      try {
        log(`seeding ${orderCount} card orders: authorize and capture through payments`);
        const seedStarted = performance.now();
        const orders = await makeCharges(
          platform,
          nc,
          partners.distribution,
          cards,
          stores,
          orderCount,
        );
        await writeOrders(client, platform.subjectPrefix, orders, partners);
        await until('order.created published', async () => {
          const pending = await count(
            client,
            `select count(*) as n from ordering.outbox where published_at is null`,
            [],
          );
          return pending === 0;
        });
        const seedSeconds = round2((performance.now() - seedStarted) / 1000);
        const ids = orders.map((order) => order.orderId);

        // The burst: deadlines from LEAD_MS from now, evenly over spreadMs.
        const firstDeadline = Date.now() + LEAD_MS;
        await client.query(
          `update ordering.orders o
              set accept_by = to_timestamp(($2::float8 + (d.i - 1) * $3::float8) / 1000)
             from unnest($1::uuid[]) with ordinality as d(order_id, i)
            where o.order_id = d.order_id`,
          [ids, firstDeadline, spreadMs / Math.max(1, orderCount - 1)],
        );
        log(`${orderCount} orders due from ${LEAD_MS} ms from now, over ${spreadMs} ms`);
        const pendingOf = () =>
          count(
            client,
            `select count(*) as n from ordering.orders where order_id = any($1) and status = 'pending'`,
            [ids],
          );
        const settledOf = () =>
          count(
            client,
            `select count(*) as n from ordering.order_refunds
              where order_id = any($1) and state = 'settled'`,
            [ids],
          );
        let cancelledSoFar = 0;
        const cancelPhase = await cpuMsPer(
          platform,
          ['ordering', 'payments'],
          () => cancelledSoFar,
          () =>
            withCpu(PROCESSES, async () => {
              await until('cancels', async () => {
                cancelledSoFar = orderCount - (await pendingOf());
                return cancelledSoFar === orderCount;
              });
              return {};
            }),
        );
        let settledSoFar = 0;
        const refundPhase = await cpuMsPer(
          platform,
          ['ordering', 'payments'],
          () => settledSoFar,
          () =>
            withCpu(PROCESSES, async () => {
              await until('refunds', async () => {
                settledSoFar = await settledOf();
                return settledSoFar === orderCount;
              });
              return {};
            }),
        );

        const { rows: timing } = await client.query<{
          lateness_ms: number;
          cancelled_at: Date;
          status: string;
          cancelled_by: string | null;
        }>(
          `select extract(epoch from updated_at - accept_by) * 1000 as lateness_ms,
                  updated_at as cancelled_at, status, cancelled_by
             from ordering.orders where order_id = any($1)`,
          [ids],
        );
        const lateness = latencySummary(timing.map((row) => Number(row.lateness_ms)));
        const cancelTimes = timing.map((row) => row.cancelled_at.getTime());
        const lastCancel = Math.max(...cancelTimes);
        const firstCancel = Math.min(...cancelTimes);
        const cancelSeconds = Math.max(0.001, (lastCancel - firstDeadline) / 1000);
        const cancelRate = round2(orderCount / cancelSeconds);
        const perReplica = round2(cancelRate / platform.replicas);

        const { rows: refundTimes } = await client.query<{ first: Date; last: Date }>(
          `select min(created_at) as first, max(settled_at) as last
             from ordering.order_refunds where order_id = any($1)`,
          [ids],
        );
        const refundSeconds = Math.max(
          0.001,
          (refundTimes[0]!.last.getTime() - refundTimes[0]!.first.getTime()) / 1000,
        );
        const refundRate = round2(orderCount / refundSeconds);

        // Each order once: a cancelled version, its event and one refund; each charge refunded
        // once, in full, at payments and at the processor.
        const checks = {
          'cancelled by the platform': timing.filter(
            (row) => row.status === 'cancelled' && row.cancelled_by === 'platform',
          ).length,
          'history rows (v2)': await count(
            client,
            `select count(*) as n from ordering.order_status_changes
              where order_id = any($1) and version = 2`,
            [ids],
          ),
          'order.cancelled events': await count(
            client,
            `select count(*) as n from ordering.outbox
              where aggregate_id = any($1::text[]) and aggregate_version = 2
                and payload->'data'->>'event' = 'order.cancelled'`,
            [ids],
          ),
          'refunds settled': settledSoFar,
          'payments refunds': await count(
            client,
            `select count(*) as n from payments.refunds r
               join payments.charges c using (charge_id)
              where c.order_id = any($1) and r.status = 'succeeded'`,
            [ids],
          ),
          'charges refunded in full': await count(
            client,
            `select count(*) as n from payments.charges
              where order_id = any($1) and status = 'refunded' and refunded_amount = amount`,
            [ids],
          ),
          'refunded at the processor': await processorRefunded(platform),
        };

        const phaseRow = (
          phase: string,
          seconds: number,
          rate: number,
          figures: CpuFigures,
          msPer: Record<string, number>,
        ): Row => ({
          phase,
          orders: orderCount,
          's (from the first deadline / first owed)': round2(seconds),
          'per s': rate,
          'per s per replica': round2(rate / platform.replicas),
          'ordering CPU ms/order': msPer.ordering,
          'payments CPU ms/order': msPer.payments,
          'CPU % (1 core = 100)': figures.serverCpu,
          [`machine busy % (${cpus} cores)`]: figures.machineBusy,
        });
        report.table('Set-up', [
          {
            orders: orderCount,
            stores: storeCount,
            'deadlines spread ms': spreadMs,
            replicas: platform.replicas,
            'processor latency ms': processorLatencyMs,
            'seeding s (charges via payments, orders written)': seedSeconds,
          },
        ]);
        report.table(
          'The burst: cancels by the acceptance sweeper, refunds by the refund sweeper',
          [
            phaseRow('cancel', cancelSeconds, cancelRate, cancelPhase.result, cancelPhase.msPer),
            phaseRow('refund', refundSeconds, refundRate, refundPhase.result, refundPhase.msPer),
          ],
        );
        report.table('Lateness: each order cancelled after its deadline (ms)', [
          {
            ...lateness,
            'first cancel after the first deadline ms': firstCancel - firstDeadline,
            // The sweep's own pace, without the wait for its timer (up to its interval).
            'cancels/s per replica, first to last cancel': round2(
              orderCount / Math.max(0.001, (lastCancel - firstCancel) / 1000) / platform.replicas,
            ),
          },
        ]);
        report.table('Checks (each of the orders)', [checks]);
        const rateMet = perReplica >= TARGET_RATE;
        const latenessMet = lateness.max <= TARGET_LATENESS_MS;
        const checked = Object.values(checks).every((value) => value === orderCount);
        report.verdicts.push(
          `cancels: ${perReplica}/s per replica (${platform.replicas} replica(s)) → target ` +
            `(≥ ${TARGET_RATE}/s per replica) ${rateMet ? 'MET' : 'NOT MET'}`,
          `lateness: p99 ${lateness.p99} ms, max ${lateness.max} ms → target (every order ` +
            `within ${TARGET_LATENESS_MS / 1000} s of its deadline) ${latenessMet ? 'MET' : 'NOT MET'}`,
          `refunds: ${refundRate}/s settled (${round2(refundRate / platform.replicas)}/s per replica)`,
          `checks: every order cancelled once by the platform, with its event and one refund ` +
            `settled in full at payments and the processor → ${checked ? 'OK' : 'FAILED'}`,
        );
        if (!checked) process.exitCode = 1;
        report.print();
      } finally {
        await client.end();
        await nc.close();
      }
    },
    () => report.print(),
  );
}

/** Charges the processor simulator holds refunded (the bench's are all its charges). */
async function processorRefunded(platform: BenchPlatform): Promise<number> {
  const response = await fetch(`${platform.processorUrl}/v1/charges?status=refunded`, {
    headers: { authorization: 'Bearer sk_test_simulator' },
  });
  return ((await response.json()) as { charges: unknown[] }).charges.length;
}
