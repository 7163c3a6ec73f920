// `npm run bench:payments`: card authorizations through the payments service (NATS request
// → payments → its database → the card processor over HTTP → its database → reply), as
// ordering's place sends them, with the platform's services as separate processes on an
// isolated database and subject prefix and the processor simulator answering after
// BENCH_PROCESSOR_LATENCY_MS (20). Three runs:
//   1. authorize, open loop at BENCH_RATE (200) req/s for BENCH_SECONDS (20): p50/p99 from
//      each request's scheduled send time, and every authorization counted on the simulator;
//   2. the floor: the same rate straight at the simulator's HTTP API (its latency alone);
//   3. the breaker open: the processor fails every call, the breaker opens, and a closed
//      loop of BENCH_CONNECTIONS (32) requests in flight measures how fast payments sheds
//      load (503 PAYMENT_PROCESSOR_UNAVAILABLE per second, p99) and how many calls still
//      reached the processor (the half-open probes).
// Each run reports the CPU each process used.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { BenchPlatform, Report } from './lib/bench-platform.mjs';
import { latencySummary, round2 } from './lib/paced-load.mjs';
import { cpuMeter, cpus } from './lib/process-cpu.mjs';
import { fail, log, serverUrls } from './lib/setup.mjs';

const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const rate = Number(process.env.BENCH_RATE ?? 200);
const port = Number(process.env.BENCH_PORT ?? 18093);
const processorLatencyMs = Number(process.env.BENCH_PROCESSOR_LATENCY_MS ?? 20);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
if (!(seconds > 0) || !(rate > 0) || !Number.isInteger(port) || !(processorLatencyMs >= 0)) {
  fail(new Error('BENCH_SECONDS and BENCH_RATE must be positive, BENCH_PORT an integer'));
}
const CARDS = 50;
const SHED_SECONDS = Math.min(seconds, 10);

const platform = await BenchPlatform.create({ port, processorLatencyMs });
const { connect, headers: natsHeaders } = await import('nats');
const withCpu = cpuMeter(platform);
const report = new Report();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The sum of a Prometheus counter's samples whose labels match on payments' ops ports (every
 * replica's, with BENCH_REPLICAS).
 */
async function paymentsCounter(name, match) {
  const texts = await Promise.all(
    platform.opsUrls('payments', '/metrics').map(async (url) => (await fetch(url)).text()),
  );
  return texts
    .join('\n')
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(match))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** Requests sent evenly at `perSecond` for `duration` s; latency from each one's scheduled time. */
async function paced(perSecond, duration, send) {
  const total = Math.round(perSecond * duration);
  const latencies = [];
  const outcomes = new Map();
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
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        },
        (error) =>
          outcomes.set(
            `error ${error.code ?? error.message}`,
            (outcomes.get(`error ${error.code ?? error.message}`) ?? 0) + 1,
          ),
      ),
    );
  }
  await Promise.all(pending);
  const wall = (performance.now() - started) / 1000;
  return {
    sent: total,
    achieved: round2(latencies.length / wall),
    outcomes,
    ...latencySummary(latencies),
  };
}

/** `connections` requests always in flight for `duration` s. */
async function closedLoop(duration, send) {
  const latencies = [];
  const outcomes = new Map();
  const until = performance.now() + duration * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const sent = performance.now();
        const outcome = await send().catch((error) => `error ${error.code ?? error.message}`);
        latencies.push(performance.now() - sent);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    }),
  );
  const wall = (performance.now() - started) / 1000;
  return {
    answered: latencies.length,
    perSecond: round2(latencies.length / wall),
    outcomes,
    ...latencySummary(latencies),
  };
}

const describeOutcomes = (outcomes) =>
  [...outcomes].map(([outcome, count]) => `${outcome} ${count}`).join(', ');

function row(run, result) {
  return {
    run,
    'req/s': result.achieved ?? result.perSecond,
    'p50 ms': result.p50,
    'p99 ms': result.p99,
    'max ms': result.max,
    outcomes: describeOutcomes(result.outcomes),
    'CPU % (1 core = 100)': result.serverCpu,
    'bench CPU %': result.loadCpu,
    [`machine busy % (${cpus} cores)`]: result.machineBusy,
  };
}

await platform.run(
  async () => {
    const { distribution } = platform.createPartners();
    log(`vaulting ${CARDS} cards through the gateway`);
    const cards = [];
    for (let i = 0; i < CARDS; i++) {
      const endUserId = `bench-user-${i}`;
      const response = await fetch(platform.url('/v1/marketfront/payments/cards'), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${distribution.apiKey}`,
          'content-type': 'application/json',
          'x-end-user-id': endUserId,
        },
        body: JSON.stringify({
          cardNumber: '4242424242424242',
          expMonth: 12,
          expYear: 2035,
          cvc: '123',
          cardholderName: 'Bench User',
        }),
      });
      if (response.status !== 201)
        throw new Error(`vault answered ${response.status}: ${await response.text()}`);
      cards.push({ endUserId, paymentId: (await response.json()).paymentId });
    }

    const nc = await connect({ servers: serverUrls.nats, noAsyncTraces: true });
    const subject = `${platform.subjectPrefix}.payments.v1.charges.authorize`;
    const encode = (value) => Buffer.from(JSON.stringify(value));
    /** One authorization with a fresh key, as place sends it; resolves to its outcome. */
    const authorize = async (index = Math.floor(Math.random() * CARDS)) => {
      const card = cards[index % CARDS];
      const headers = natsHeaders();
      headers.set('X-Request-Id', randomUUID());
      headers.set('Pcp-Partner-Id', distribution.partnerId);
      headers.set('Pcp-Partner-Kind', 'distribution');
      headers.set('Pcp-End-User-Id', card.endUserId);
      headers.set('Pcp-Payment-Types', 'CARD');
      const body = {
        paymentId: card.paymentId,
        amount: 2_565,
        currency: 'USD',
        idempotencyKey: randomUUID(),
      };
      const reply = await nc.request(subject, encode(body), {
        headers,
        timeout: 15_000,
      });
      if (reply.headers?.get('Pcp-Reply') === 'ok') return 'authorized';
      return JSON.parse(Buffer.from(reply.data).toString('utf8')).errorCode;
    };
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
    const tokenized = await (
      await fetch(`${platform.processorUrl}/v1/tokens`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer sk_test_simulator',
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify({
          number: '4242424242424242',
          expMonth: 12,
          expYear: 2035,
          cvc: '123',
        }),
      })
    ).json();
    const direct = await withCpu(['processor-simulator'], () =>
      paced(rate, seconds, async () => {
        const response = await fetch(`${platform.processorUrl}/v1/authorizations`, {
          method: 'POST',
          headers: {
            authorization: 'Bearer sk_test_simulator',
            'content-type': 'application/json',
            'idempotency-key': randomUUID(),
          },
          body: JSON.stringify({ token: tokenized.token, amount: 2_565, currency: 'USD' }),
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
    for (let i = 0; i < 100; i++) {
      if (
        (await paymentsCounter('pcp_payment_processor_calls_total', 'outcome="short_circuited"')) >
        0
      )
        break;
      await authorize();
    }
    const reachedBefore = await paymentsCounter(
      'pcp_payment_processor_calls_total',
      'outcome="failed"',
    );
    const shed = await withCpu(processors, () => closedLoop(SHED_SECONDS, () => authorize()));
    const reached =
      (await paymentsCounter('pcp_payment_processor_calls_total', 'outcome="failed"')) -
      reachedBefore;
    report.table(`Breaker open: ${connections} requests in flight for ${SHED_SECONDS} s`, [
      row('shed', shed),
    ]);
    await nc.close();

    report.verdicts.push(
      `authorize at ${rate}/s: p50 ${authorized.p50} ms, p99 ${authorized.p99} ms over a ${processorLatencyMs} ms processor (simulator alone: p50 ${direct.p50} ms, p99 ${direct.p99} ms)`,
      `charges on the simulator: ${charged} for ${authorized.outcomes.get('authorized') ?? 0} authorizations ${charged === (authorized.outcomes.get('authorized') ?? 0) ? '(one each)' : '(MISMATCH)'}`,
      `breaker open: ${shed.perSecond} answers/s (${describeOutcomes(shed.outcomes)}), p99 ${shed.p99} ms; ${reached} calls reached the processor meanwhile (half-open probes)`,
    );
    if (charged !== (authorized.outcomes.get('authorized') ?? 0)) process.exitCode = 1;
    report.print();
  },
  () => report.print(),
);

async function countCharges() {
  const response = await fetch(`${platform.processorUrl}/v1/charges?status=authorized`, {
    headers: { authorization: 'Bearer sk_test_simulator' },
  });
  return (await response.json()).charges.length;
}
