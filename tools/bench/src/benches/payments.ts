// Card authorizations through the payments service (NATS request → payments → the processor
// simulator over HTTP), as ordering's place sends them, open loop; the floor (the simulator
// alone); and the breaker open, measuring how fast payments sheds load.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fail, log, serverUrls } from '@pcp/setup';
import { connect, headers as natsHeaders, type NatsConnection } from 'nats';
import { envNumber, round2, sleep } from '../helpers.js';
import { cpuMeter, cpus, type CpuFigures } from '../load/cpu.js';
import { latencySummary, type LatencySummary } from '../load/paced-load.js';
import { BenchPlatform, type Partner } from '../platform/bench-platform.js';
import { Report, type Row } from '../report.js';

const CARDS = 50;
const SIMULATOR_KEY = 'Bearer sk_test_simulator';

type Outcomes = Map<string, number>;
const count = (outcomes: Outcomes, outcome: string) =>
  outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
const errorOutcome = (error: unknown) => {
  const { code, message } = error as { code?: string; message?: string };
  return `error ${code ?? message}`;
};

/** Requests sent evenly at `perSecond` for `duration` s; latency from each one's scheduled time. */
async function paced(
  perSecond: number,
  duration: number,
  send: (index: number) => Promise<string>,
) {
  const total = Math.round(perSecond * duration);
  const latencies: number[] = [];
  const outcomes: Outcomes = new Map();
  const started = performance.now();
  const pending = [];
  for (let index = 0; index < total; index++) {
    const scheduled = started + (index * 1000) / perSecond;
    const wait = scheduled - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(
      send(index).then(
        (outcome) => {
          latencies.push(performance.now() - scheduled);
          count(outcomes, outcome);
        },
        (error) => count(outcomes, errorOutcome(error)),
      ),
    );
  }
  await Promise.all(pending);
  const wall = (performance.now() - started) / 1000;
  return { achieved: round2(latencies.length / wall), outcomes, ...latencySummary(latencies) };
}

/** `connections` requests always in flight for `duration` s. */
async function closedLoop(connections: number, duration: number, send: () => Promise<string>) {
  const latencies: number[] = [];
  const outcomes: Outcomes = new Map();
  const until = performance.now() + duration * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const sent = performance.now();
        count(outcomes, await send().catch(errorOutcome));
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const wall = (performance.now() - started) / 1000;
  return { achieved: round2(latencies.length / wall), outcomes, ...latencySummary(latencies) };
}

const describeOutcomes = (outcomes: Outcomes) =>
  [...outcomes].map(([outcome, n]) => `${outcome} ${n}`).join(', ');

type Measured = LatencySummary & CpuFigures & { achieved: number; outcomes: Outcomes };

function row(run: string, result: Measured): Row {
  return {
    run,
    'req/s': result.achieved,
    'p50 ms': result.p50,
    'p99 ms': result.p99,
    'max ms': result.max,
    outcomes: describeOutcomes(result.outcomes),
    'CPU % (1 core = 100)': result.serverCpu,
    'bench CPU %': result.loadCpu,
    [`machine busy % (${cpus} cores)`]: result.machineBusy,
  };
}

export async function run(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 20);
  const rate = envNumber('BENCH_RATE', 200);
  const port = envNumber('BENCH_PORT', 18093);
  const processorLatencyMs = envNumber('BENCH_PROCESSOR_LATENCY_MS', 20);
  const connections = envNumber('BENCH_CONNECTIONS', 32);
  if (!(seconds > 0) || !(rate > 0) || !Number.isInteger(port) || !(processorLatencyMs >= 0)) {
    fail(new Error('BENCH_SECONDS and BENCH_RATE must be positive, BENCH_PORT an integer'));
  }
  const shedSeconds = Math.min(seconds, 10);
  const platform = await BenchPlatform.create({ port, processorLatencyMs });
  const withCpu = cpuMeter(platform);
  const report = new Report();

  /** The sum of a payments counter's samples whose labels match, over every replica. */
  async function paymentsCounter(name: string, match: string) {
    const texts = await Promise.all(
      platform.opsUrls('payments', '/metrics').map(async (url) => (await fetch(url)).text()),
    );
    return texts
      .join('\n')
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`) && line.includes(match))
      .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
  }
  const processorCalls = (outcome: string) =>
    paymentsCounter('pcp_payment_processor_calls_total', `outcome="${outcome}"`);

  async function countCharges() {
    const response = await fetch(`${platform.processorUrl}/v1/charges?status=authorized`, {
      headers: { authorization: SIMULATOR_KEY },
    });
    return ((await response.json()) as { charges: unknown[] }).charges.length;
  }

  /** Simulator API calls with a fresh idempotency key. */
  const simulator = (path: string, body: object) =>
    fetch(`${platform.processorUrl}${path}`, {
      method: 'POST',
      headers: {
        authorization: SIMULATOR_KEY,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify(body),
    });

  /** One authorization for a new order, as place sends it; resolves to its outcome. */
  function authorizer(
    nc: NatsConnection,
    distribution: Partner,
    cards: { endUserId: string; paymentId: string }[],
  ) {
    const subject = `${platform.subjectPrefix}.payments.v1.charges.authorize`;
    return async (index = Math.floor(Math.random() * CARDS)) => {
      const card = cards[index % CARDS]!;
      const headers = natsHeaders();
      headers.set('X-Request-Id', randomUUID());
      headers.set('Pcp-Partner-Id', distribution.partnerId);
      headers.set('Pcp-Partner-Kind', 'distribution');
      headers.set('Pcp-End-User-Id', card.endUserId);
      headers.set('Pcp-Payment-Types', 'CARD');
      // A new order (place attempt) each: an order has at most one charge.
      const body = {
        orderId: randomUUID(),
        paymentId: card.paymentId,
        amount: 2_565,
        currency: 'USD',
        mode: 'live',
      };
      const reply = await nc.request(subject, Buffer.from(JSON.stringify(body)), {
        headers,
        timeout: 15_000,
      });
      if (reply.headers?.get('Pcp-Reply') === 'ok') return 'authorized';
      return (JSON.parse(Buffer.from(reply.data).toString('utf8')) as { errorCode: string })
        .errorCode;
    };
  }

  await platform.run(
    async () => {
      const { distribution } = platform.createPartners();
      log(`vaulting ${CARDS} cards through the gateway`);
      const cards = await platform.vaultCards(distribution, CARDS, 'bench-user');
      const nc = await connect({ servers: serverUrls.nats, noAsyncTraces: true });
      const authorize = authorizer(nc, distribution, cards);
      const processors = ['payments', 'processor-simulator', 'nats'];

      log('warm-up: 5 s at 50 req/s');
      await paced(50, 5, authorize);
      const chargesBefore = await countCharges();
      log(`authorize: ${rate} req/s for ${seconds} s, processor latency ${processorLatencyMs} ms`);
      const authorized = await withCpu(processors, () => paced(rate, seconds, authorize));
      const charged = (await countCharges()) - chargesBefore;
      report.table(
        `Authorize through payments, open loop (processor simulator at ${processorLatencyMs} ms)`,
        [row(`authorize at ${rate}/s`, authorized)],
      );

      log(`floor: ${rate} req/s straight to the processor simulator`);
      const { token } = (await (
        await simulator('/v1/tokens', {
          number: '4242424242424242',
          expMonth: 12,
          expYear: 2035,
          cvc: '123',
        })
      ).json()) as { token: string };
      const direct = await withCpu(['processor-simulator'], () =>
        paced(rate, seconds, async () => {
          const response = await simulator('/v1/authorizations', {
            token,
            amount: 2_565,
            currency: 'USD',
          });
          await response.arrayBuffer();
          return String(response.status);
        }),
      );
      report.table('The floor: the processor simulator alone over HTTP (this process as client)', [
        row(`authorize at ${rate}/s`, direct),
      ]);

      log('breaker: the processor fails every call');
      await fetch(`${platform.processorUrl}/_control/faults`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ errorRate: 1 }),
      });
      // The breaker opens once half the calls of its window (10 s) failed, so after the paced
      // runs' successes it takes about as many failures: fail until it sheds, then measure.
      const opening = Date.now();
      while ((await processorCalls('short_circuited')) === 0) {
        if (Date.now() - opening > 60_000) throw new Error('the breaker did not open in 60 s');
        await Promise.all(Array.from({ length: 8 }, () => authorize()));
      }
      const reachedBefore = await processorCalls('failed');
      const shed = await withCpu(processors, () =>
        closedLoop(connections, shedSeconds, () => authorize()),
      );
      const reached = (await processorCalls('failed')) - reachedBefore;
      report.table(`Breaker open: ${connections} requests in flight for ${shedSeconds} s`, [
        row('shed', shed),
      ]);
      await nc.close();

      const authorizedCount = authorized.outcomes.get('authorized') ?? 0;
      report.verdicts.push(
        `authorize at ${rate}/s: p50 ${authorized.p50} ms, p99 ${authorized.p99} ms over a ${processorLatencyMs} ms processor (simulator alone: p50 ${direct.p50} ms, p99 ${direct.p99} ms)`,
        `charges on the simulator: ${charged} for ${authorizedCount} authorizations ${charged === authorizedCount ? '(one each)' : '(MISMATCH)'}`,
        `breaker open: ${shed.achieved} answers/s (${describeOutcomes(shed.outcomes)}), p99 ${shed.p99} ms; ${reached} calls reached the processor meanwhile (half-open probes)`,
      );
      // Every paced authorization must be one: a refusal (a request the contract no longer
      // accepts, say) would otherwise pass for a fast payments service.
      const requested = [...authorized.outcomes.values()].reduce((sum, n) => sum + n, 0);
      if (authorizedCount !== requested) {
        report.verdicts.push(
          `NOT ALL AUTHORIZED: ${describeOutcomes(authorized.outcomes)} of ${requested} requests`,
        );
      }
      if (charged !== authorizedCount || authorizedCount !== requested) process.exitCode = 1;
      report.print();
    },
    () => report.print(),
  );
}
