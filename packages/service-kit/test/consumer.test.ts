import { AckPolicy, connect, nanos, type JetStreamManager, type JsMsg } from 'nats';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from '@pcp/testing/environment';
import {
  ensureConsumer,
  retryWindowMs,
  startConsumer,
  type ConsumerOptions,
} from '../src/consumer.js';
import { deadLetterHeaders, deadLetterStream, ensureStream, streamName } from '../src/streams.js';
import { createMetrics, type ServiceMetrics } from '../src/metrics.js';

let env: TestEnvironment;
let jsm: JetStreamManager;
let streams = 0;

beforeAll(async () => {
  env = await createTestEnvironment();
  jsm = await env.nc.jetstreamManager();
});

afterAll(async () => {
  await env?.cleanup();
});

/** A stream of its own with `count` messages `{i}`, and consumer options over it. */
async function withMessages(count: number) {
  const name = `consumer_${++streams}`;
  const stream = streamName(env.prefix, name);
  const subject = `${env.prefix}.${name}`;
  await ensureStream(jsm, { name: stream, subjects: [subject] });
  const js = env.nc.jetstream();
  for (let i = 0; i < count; i++) await js.publish(subject, JSON.stringify({ i }));
  const metrics = createMetrics('test');
  const base: Omit<ConsumerOptions, 'handle'> = {
    js,
    jsm,
    prefix: env.prefix,
    stream,
    durable: name,
    concurrency: 1,
    ackWaitMs: 5_000,
    timeoutMs: 2_000,
    backoffMs: [50],
    maxDeliveries: 5,
    logger: env.logger,
    metrics,
  };
  return { stream, subject, metrics, base };
}

/** What the migration step does (declare the consumer), then the loop. */
async function startDeclared(options: ConsumerOptions) {
  await ensureConsumer(options.jsm, options);
  return startConsumer(options);
}

const indexOf = (msg: JsMsg) => msg.json<{ i: number }>().i;

async function counted(metrics: ServiceMetrics, outcome: string): Promise<number> {
  const metric = await metrics.consumerMessages.get();
  return metric.values
    .filter((value) => value.labels.outcome === outcome)
    .reduce((sum, value) => sum + value.value, 0);
}

/** The dead letters recorded for this deployment, oldest first. */
async function deadLetters() {
  const name = deadLetterStream(env.prefix);
  const info = await jsm.streams.info(name);
  const letters = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && seq > 0; seq++) {
    const msg = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
    if (msg) letters.push(msg);
  }
  return letters;
}

describe('consumer loop', () => {
  it('never handles more messages at once than its concurrency', async () => {
    const { base } = await withMessages(8);
    let active = 0;
    let peak = 0;
    const handled = new Set<number>();
    const loop = await startDeclared({
      ...base,
      concurrency: 2,
      handle: async (msg) => {
        active += 1;
        peak = Math.max(peak, active);
        await sleep(20);
        active -= 1;
        handled.add(indexOf(msg));
      },
    });
    await expect.poll(() => handled.size, { timeout: 10_000 }).toBe(8);
    await loop.stop();
    expect(peak).toBe(2);
  });

  it('fetches again only once refillWhenFree slots are free', async () => {
    const { base, subject } = await withMessages(8);
    const started = new Set<number>();
    const release = new Map<number, () => void>();
    const loop = await startDeclared({
      ...base,
      concurrency: 8,
      refillWhenFree: 2,
      handle: async (msg) => {
        const index = indexOf(msg);
        started.add(index);
        await new Promise<void>((resolve) => release.set(index, resolve));
      },
    });
    try {
      await expect.poll(() => started.size, { timeout: 10_000 }).toBe(8);
      await env.nc.jetstream().publish(subject, JSON.stringify({ i: 8 }));
      release.get(0)!();
      // One slot free: no fetch for it.
      await sleep(500);
      expect(started.has(8)).toBe(false);
      release.get(1)!();
      await expect.poll(() => started.has(8), { timeout: 10_000 }).toBe(true);
    } finally {
      for (const done of release.values()) done();
      await loop.stop();
    }
  });

  it('gives JetStream the ack wait it asked for, and retries on its own backoff', async () => {
    const { base, stream } = await withMessages(1);
    // The consumer as an older release made it, with the server applying a backoff.
    await jsm.consumers.add(stream, {
      durable_name: base.durable,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(30_000),
      backoff: [nanos(1_000), nanos(5_000)],
      max_deliver: 20,
    });
    const deliveredAt: number[] = [];
    const loop = await startDeclared({
      ...base,
      ackWaitMs: 3_000,
      timeoutMs: 2_500,
      backoffMs: [300, 900],
      handle: async (msg, work) => {
        deliveredAt.push(Date.now());
        // A slow handler: it must not be delivered again while it runs.
        if (work.attempt === 1) await sleep(1_500);
        if (work.attempt < 4) throw new Error(`attempt ${work.attempt} fails`);
      },
    });
    const info = await jsm.consumers.info(stream, base.durable);
    expect(info.config.ack_wait).toBe(nanos(3_000));
    expect(info.config.backoff ?? []).toEqual([]);
    expect(info.config.max_deliver).toBeGreaterThan(base.maxDeliveries);

    await expect.poll(() => deliveredAt.length, { timeout: 10_000 }).toBe(4);
    await sleep(500);
    await loop.stop();
    expect(deliveredAt).toHaveLength(4);
    // The first retry waited for the slow attempt and then its backoff step; the last step
    // repeats.
    const gaps = deliveredAt.slice(1).map((at, n) => at - deliveredAt[n]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(1_500 + 300 - 20);
    expect(gaps[0]).toBeLessThan(1_500 + 300 + 700);
    expect(gaps[1]).toBeGreaterThanOrEqual(900 - 20);
    expect(gaps[1]).toBeLessThan(900 + 700);
    expect(gaps[2]).toBeGreaterThanOrEqual(900 - 20);
  });

  it('dead-letters a message that fails every delivery, with why, and counts it', async () => {
    const { base, metrics, subject } = await withMessages(1);
    let calls = 0;
    const before = (await deadLetters().catch(() => [])).length;
    const loop = await startDeclared({
      ...base,
      maxDeliveries: 3,
      handle: () => {
        calls += 1;
        return Promise.reject(new Error('the database is down'));
      },
    });
    await expect.poll(() => counted(metrics, 'dead_lettered'), { timeout: 10_000 }).toBe(1);
    await sleep(300);
    await loop.stop();
    expect(calls).toBe(3);
    expect(await counted(metrics, 'retried')).toBe(2);
    const letters = (await deadLetters()).slice(before);
    expect(letters).toHaveLength(1);
    const letter = letters[0]!;
    expect(letter.json()).toEqual({ i: 0 });
    expect(letter.header.get(deadLetterHeaders.subject)).toBe(subject);
    expect(letter.header.get(deadLetterHeaders.deliveries)).toBe('3');
    expect(letter.header.get(deadLetterHeaders.reason)).toMatch(/the database is down/);
  });

  it('starts every outcome at zero, so an alert on increase() sees the first dead letter', async () => {
    const { base, metrics } = await withMessages(0);
    const loop = await startDeclared({ ...base, handle: () => Promise.resolve() });
    await loop.stop();
    const series = (await metrics.consumerMessages.get()).values.map((value) => [
      value.labels.outcome,
      value.value,
    ]);
    expect(Object.fromEntries(series)).toEqual({
      acked: 0,
      retried: 0,
      timed_out: 0,
      dead_lettered: 0,
      handed_back: 0,
    });
  });

  it('reports its backlog on scrape: pending, ack pending and redelivered', async () => {
    const { base, metrics, subject } = await withMessages(1);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const loop = await startDeclared({
      ...base,
      handle: async (msg, work) => {
        // The first message fails once, then holds the only slot: in hand, and redelivered.
        if (indexOf(msg) === 0 && work.attempt === 1) throw new Error('transient');
        if (indexOf(msg) === 0) {
          holding();
          await released;
        }
      },
    });
    const backlog = async () => {
      const gauge = await metrics.registry.getSingleMetric('pcp_consumer_backlog_messages')!.get();
      return Object.fromEntries(
        gauge.values
          .filter((value) => value.labels.consumer === base.durable)
          .map((value) => [value.labels.state, value.value]),
      );
    };
    await held;
    // Two more wait behind it (a reading serves scrapes for 5 s: the poll outlasts one).
    const js = env.nc.jetstream();
    for (const i of [1, 2]) await js.publish(subject, JSON.stringify({ i }));
    await expect
      .poll(backlog, { timeout: 12_000 })
      .toEqual({ pending: 2, ack_pending: 1, redelivered: 1 });
    release();
    await expect.poll(() => counted(metrics, 'acked'), { timeout: 5_000 }).toBe(3);
    await loop.stop();
    // A stopped loop is no longer reported.
    expect(await backlog()).toEqual({});
  });

  it('gives up on a message that fails or hangs every delivery within its retry window', async () => {
    const { base, metrics } = await withMessages(1);
    const schedule = { ackWaitMs: 1_000, timeoutMs: 200, backoffMs: [100, 300], maxDeliveries: 4 };
    const deliveredAt: number[] = [];
    const loop = await startDeclared({
      ...base,
      ...schedule,
      handle: async (_msg, work) => {
        deliveredAt.push(Date.now());
        // Odd deliveries fail at once, even ones hang until their timeout aborts them.
        if (work.attempt % 2 === 1) throw new Error('refused');
        await new Promise((resolve) => work.signal.addEventListener('abort', resolve));
      },
    });
    await expect.poll(() => counted(metrics, 'dead_lettered'), { timeout: 10_000 }).toBe(1);
    const gaveUpAfter = Date.now() - deliveredAt[0]!;
    await loop.stop();
    expect(deliveredAt).toHaveLength(4);
    // Two hangs and three backoff steps at least; within the window the schedule promises.
    expect(gaveUpAfter).toBeGreaterThanOrEqual(2 * 200 + 100 + 300 + 300 - 20);
    expect(gaveUpAfter).toBeLessThanOrEqual(retryWindowMs(schedule));
    // Every delivery waits for a slot, a last one that died waits again after its ack wait.
    expect(retryWindowMs(schedule)).toBe(5 * 200 + 1_000 + 1_000 + 1_000 + 1_000);
  });

  it('dead-letters at once a message its handler says can never be handled', async () => {
    const { base, metrics } = await withMessages(2);
    const before = (await deadLetters().catch(() => [])).length;
    const handled: number[] = [];
    const loop = await startDeclared({
      ...base,
      handle: (msg) => {
        handled.push(indexOf(msg));
        return Promise.resolve(indexOf(msg) === 0 ? { deadLetter: 'not an event' } : undefined);
      },
    });
    await expect.poll(() => handled.length, { timeout: 10_000 }).toBe(2);
    await expect.poll(() => counted(metrics, 'dead_lettered')).toBe(1);
    await loop.stop();
    expect(handled).toEqual([0, 1]);
    const letters = (await deadLetters()).slice(before);
    expect(letters.map((letter) => letter.header.get(deadLetterHeaders.reason))).toEqual([
      'not an event',
    ]);
  });

  it('records the dead letter of a message whose last delivery died with its process', async () => {
    const { base, metrics } = await withMessages(1);
    const before = (await deadLetters().catch(() => [])).length;
    // A process of its own, which dies (its connection closes) during the last delivery.
    const doomed = await connect({ servers: env.nc.getServer() });
    let started = 0;
    const doomedLoop = await startDeclared({
      ...base,
      js: doomed.jetstream(),
      jsm: await doomed.jetstreamManager(),
      ackWaitMs: 600,
      timeoutMs: 500,
      backoffMs: [10],
      maxDeliveries: 2,
      metrics: createMetrics('doomed'),
      handle: async (_msg, work) => {
        started += 1;
        if (work.attempt === 1) throw new Error('transient');
        await new Promise(() => undefined); // hangs until the process dies
      },
    });
    await expect.poll(() => started, { timeout: 10_000 }).toBe(2);
    await doomed.close();
    await doomedLoop.stop(0);

    let handledAgain = 0;
    const survivor = await startDeclared({
      ...base,
      ackWaitMs: 600,
      timeoutMs: 500,
      maxDeliveries: 2,
      handle: () => {
        handledAgain += 1;
        return Promise.resolve();
      },
    });
    await expect.poll(() => counted(metrics, 'dead_lettered'), { timeout: 10_000 }).toBe(1);
    await survivor.stop();
    expect(handledAgain).toBe(0);
    const letters = (await deadLetters()).slice(before);
    expect(letters[0]!.header.get(deadLetterHeaders.reason)).toMatch(/not handled in 2 deliveries/);
  });

  it('times out a hung handler, frees its slot and retries it after its backoff', async () => {
    const { base, metrics } = await withMessages(3);
    const aborted: number[] = [];
    const done: number[] = [];
    const loop = await startDeclared({
      ...base,
      timeoutMs: 300,
      backoffMs: [200],
      handle: async (msg, work) => {
        if (indexOf(msg) === 0 && work.attempt === 1) {
          // Hangs, and sees the abort.
          await new Promise<void>((resolve) =>
            work.signal.addEventListener('abort', () => resolve()),
          );
          aborted.push(indexOf(msg));
          return;
        }
        done.push(indexOf(msg));
      },
    });
    await expect.poll(() => done.length, { timeout: 10_000 }).toBe(3);
    await loop.stop();
    expect(aborted).toEqual([0]);
    // With one slot, the others ran while the hung one was out; it came back after its backoff.
    expect(done).toEqual([1, 2, 0]);
    expect(await counted(metrics, 'timed_out')).toBe(1);
    expect(await counted(metrics, 'acked')).toBe(3);
  });

  it('keeps a long handler that signals working() past its timeout', async () => {
    const { base, metrics } = await withMessages(1);
    let deliveries = 0;
    const loop = await startDeclared({
      ...base,
      ackWaitMs: 600,
      timeoutMs: 400,
      handle: async (_msg, work) => {
        deliveries += 1;
        for (let step = 0; step < 8; step++) {
          await sleep(200);
          work.working();
        }
      },
    });
    await expect.poll(() => counted(metrics, 'acked'), { timeout: 10_000 }).toBe(1);
    await loop.stop();
    expect(deliveries).toBe(1);
    expect(await counted(metrics, 'timed_out')).toBe(0);
  });

  it('on stop, waits for handlers in flight, then hands back the rest; nothing settles after', async () => {
    const { base, stream } = await withMessages(2);
    const finished: number[] = [];
    const loop = await startDeclared({
      ...base,
      concurrency: 2,
      handle: async (msg, work) => {
        // Message 0 is quick enough for the stop's wait; message 1 is not.
        await sleep(indexOf(msg) === 0 ? 200 : 3_000, undefined, { signal: work.signal });
        finished.push(indexOf(msg));
      },
    });
    await expect
      .poll(async () => (await jsm.consumers.info(stream, base.durable)).num_ack_pending)
      .toBe(2);
    const stoppedAt = Date.now();
    await loop.stop(800);
    expect(Date.now() - stoppedAt).toBeLessThan(1_500);
    expect(finished).toEqual([0]);

    // Message 1 was handed back: the next consumer gets it at once (no ack wait).
    const redelivered: { i: number; attempt: number }[] = [];
    const next = await startDeclared({
      ...base,
      handle: (msg, work) => {
        redelivered.push({ i: indexOf(msg), attempt: work.attempt });
        return Promise.resolve();
      },
    });
    await expect.poll(() => redelivered, { timeout: 3_000 }).toEqual([{ i: 1, attempt: 2 }]);
    await next.stop();
    const info = await jsm.consumers.info(stream, base.durable);
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
  });

  it('on stop, lets an aborted handler clean up before its message is handed back', async () => {
    const { base } = await withMessages(1);
    let started = false;
    let cleanedUp = false;
    const loop = await startDeclared({
      ...base,
      handle: async (_msg, work) => {
        started = true;
        try {
          await sleep(10_000, undefined, { signal: work.signal });
        } finally {
          // As a worker releases the lease it holds: slower than the hand-back's own nak.
          await sleep(150);
          cleanedUp = true;
        }
      },
    });
    await expect.poll(() => started, { timeout: 5_000 }).toBe(true);
    await loop.stop(1_000);
    expect(cleanedUp).toBe(true);

    // The next consumer's first delivery finds the clean-up done.
    const seenAtRedelivery: boolean[] = [];
    const next = await startDeclared({
      ...base,
      handle: () => {
        seenAtRedelivery.push(cleanedUp);
        return Promise.resolve();
      },
    });
    await expect.poll(() => seenAtRedelivery, { timeout: 3_000 }).toEqual([true]);
    await next.stop();
  });

  it('keeps stream order only with one slot and no retries; a retried message comes after later ones', async () => {
    const inOrder = await withMessages(5);
    const seen: number[] = [];
    const first = await startDeclared({
      ...inOrder.base,
      handle: (msg) => {
        seen.push(indexOf(msg));
        return Promise.resolve();
      },
    });
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(5);
    await first.stop();
    expect(seen).toEqual([0, 1, 2, 3, 4]);

    const retried = await withMessages(3);
    const order: number[] = [];
    const second = await startDeclared({
      ...retried.base,
      backoffMs: [300],
      handle: (msg, work) => {
        order.push(indexOf(msg));
        return Promise.resolve(
          indexOf(msg) === 0 && work.attempt === 1 ? { retryInMs: 300 } : undefined,
        );
      },
    });
    await expect.poll(() => order.length, { timeout: 10_000 }).toBe(4);
    await second.stop();
    expect(order).toEqual([0, 1, 2, 0]);
  });

  it('refuses a handler timeout that JetStream would redeliver before', async () => {
    const { base } = await withMessages(0);
    await expect(
      startConsumer({
        ...base,
        ackWaitMs: 1_000,
        timeoutMs: 1_000,
        handle: () => Promise.resolve(),
      }),
    ).rejects.toThrow(/timeoutMs must be shorter than ackWaitMs/);
  });

  it('starts only on a consumer declared as it expects, and says how to get one', async () => {
    const { base } = await withMessages(0);
    const options = { ...base, handle: () => Promise.resolve() };
    await expect(startConsumer(options)).rejects.toThrow(
      /consumer consumer_\d+ of stream .* is missing: apply the JetStream topology/,
    );
    await ensureConsumer(jsm, { ...options, ackWaitMs: 9_000 });
    await expect(startConsumer(options)).rejects.toThrow(/differs from its declaration \(ack_wait/);
    await ensureConsumer(jsm, options);
    const loop = await startConsumer(options);
    await loop.stop();
  });
});
