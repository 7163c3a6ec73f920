import {
  AckPolicy,
  headers as createHeaders,
  nanos,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from 'nats';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from './logger.js';
import { consumeInContext } from './message-tracing.js';
import { deadLetterHeaders, deadLetterStream, deadLetterSubject } from './streams.js';
import type { ServiceMetrics } from './metrics.js';

/** What a handler gets besides the message. */
export interface ConsumerWork {
  /** Which delivery of the message this is (1 for the first). */
  readonly attempt: number;
  /**
   * Aborted when the handler ran past its timeout or the consumer hands the message back at
   * shutdown: stop, and commit nothing more (the message will be delivered again).
   */
  readonly signal: AbortSignal;
  /** For long work: the message is in hand; restarts both JetStream's ack wait and the timeout. */
  working(): void;
}

/**
 * What became of a message. Nothing (the usual return) acks it; `retryInMs` has it delivered
 * again after that delay; `deadLetter` records it with the reason and never delivers it
 * again (a message that can never be handled). A handler that throws or times out is retried
 * after its backoff step.
 */
export type HandlerOutcome = void | { retryInMs: number } | { deadLetter: string };

/**
 * A durable consumer as the JetStream topology declares it (topology.ts): the migration step
 * creates it with `ensureConsumer`, a service's `startConsumer` runs it.
 */
export interface ConsumerDeclaration {
  /** The stream's full name (with the deployment prefix). */
  readonly stream: string;
  readonly durable: string;
  /** Server-side settings besides those the loop owns (filter, deliver policy, ack pending). */
  readonly config?: Omit<
    Partial<ConsumerConfig>,
    'durable_name' | 'ack_policy' | 'ack_wait' | 'backoff' | 'max_deliver'
  >;
  /** How long JetStream waits for an ack before delivering the message again. */
  readonly ackWaitMs: number;
  /** How long a handler may run without calling `working()`; less than `ackWaitMs`. */
  readonly timeoutMs: number;
  /** Delay before the nth retry; the last step repeats. */
  readonly backoffMs: readonly number[];
  /** Deliveries a message gets before it is dead-lettered. */
  readonly maxDeliveries: number;
}

export interface ConsumerOptions extends ConsumerDeclaration {
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Deployment prefix: names the dead-letter stream. */
  prefix: string;
  /** Messages handled at once by this process. */
  concurrency: number;
  /**
   * Fetch only once this many slots are free (default 1). Each fetch costs a pull request, an
   * inbox subscription and a heartbeat timer: for short handlers, a quarter of the slots makes
   * one fetch serve several messages. Long handlers keep 1, or a message waits for a second one.
   */
  refillWhenFree?: number;
  logger: Logger;
  metrics?: ServiceMetrics;
  handle(msg: JsMsg, work: ConsumerWork): Promise<HandlerOutcome>;
}

export interface ConsumerLoop {
  /**
   * Stop pulling and wait for the messages being handled; those still running a grace before
   * `timeoutMs` are aborted, given the grace to clean up (a lease they hold is released), and
   * handed back (delivered again at once, here or elsewhere). Nothing is acked or naked after
   * it returns.
   */
  stop(timeoutMs?: number): Promise<void>;
}

/** How a delivery was settled (`pcp_consumer_messages_total{outcome}`). */
const CONSUMER_OUTCOMES = [
  'acked',
  'retried',
  'timed_out',
  'dead_lettered',
  'handed_back',
] as const;
type ConsumerOutcome = (typeof CONSUMER_OUTCOMES)[number];

/**
 * Deliveries past `maxDeliveries` the server still makes: one that finds the message over its
 * count only records the dead letter, so a process that died during the last attempt (or
 * could not record it) leaves it to the next delivery instead of the server dropping it.
 */
const DEAD_LETTER_DELIVERIES = 3;

/** The most of a stop's time an aborted handler gets to clean up before its hand-back. */
const HAND_BACK_GRACE_MS = 2_000;

/** The settings of a consumer that decide how long it keeps a message before giving up on it. */
export type RetrySchedule = Pick<
  ConsumerDeclaration,
  'ackWaitMs' | 'timeoutMs' | 'backoffMs' | 'maxDeliveries'
>;

/**
 * The longest `startConsumer` can take from a message's first delivery until it is handled or
 * dead-lettered, for a handler that fails, hangs or dies with its process on every delivery,
 * never calls `working()` and never asks for a `retryInMs` of its own, provided the consumer
 * keeps up: each delivery waits up to a handler timeout for a free slot (a busy one frees by
 * then), then fails by its timeout and comes back after its backoff step, or dies and comes
 * back after the ack wait. The last delivery is dead-lettered when it fails; when it dies, the
 * next delivery records the dead letter at once. Whatever waits on such a message (a later
 * version of its aggregate) must wait at least this long.
 */
export function retryWindowMs(schedule: RetrySchedule): number {
  const { ackWaitMs, timeoutMs, backoffMs, maxDeliveries } = schedule;
  // Every delivery's wait for a slot, one more after a last one that died, and its ack wait.
  let total = (maxDeliveries + 1) * timeoutMs + ackWaitMs;
  for (let delivery = 1; delivery < maxDeliveries; delivery++) {
    total += Math.max(timeoutMs + backoffStep(backoffMs, delivery), ackWaitMs);
  }
  return total;
}

/** The delay after the nth failed delivery: the schedule's nth step, the last one repeating. */
function backoffStep(backoffMs: readonly number[], delivery: number): number {
  return backoffMs[Math.min(delivery, backoffMs.length) - 1]!;
}

/** The server-side configuration of a declared consumer. */
function consumerConfig(declaration: ConsumerDeclaration): Partial<ConsumerConfig> {
  return {
    ...declaration.config,
    durable_name: declaration.durable,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(declaration.ackWaitMs),
    max_deliver: declaration.maxDeliveries + DEAD_LETTER_DELIVERIES,
    // Cleared explicitly: an update merges into the consumer's old config.
    backoff: undefined,
  };
}

/**
 * Create the consumer, or bring an existing one to its declaration. The backoff is applied by
 * the loop, not given to the server: nats-server 2.9 replaces AckWait with the first BackOff
 * step, which would redeliver slow handlers while they still run. Only the migration step (or
 * an operator) may: services lack the rights.
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  declaration: ConsumerDeclaration,
): Promise<void> {
  const config = consumerConfig(declaration);
  try {
    await jsm.consumers.add(declaration.stream, config);
  } catch (error) {
    if (!/already in use|exists/i.test(String(error))) throw error;
    await jsm.consumers.update(declaration.stream, declaration.durable, config);
  }
}

/** Fail unless the consumer exists as declared (the loop's retries depend on its settings). */
async function requireConsumer(jsm: JetStreamManager, declaration: ConsumerDeclaration) {
  const { stream, durable } = declaration;
  const apply = 'apply the JetStream topology (npm run migrate, the migration Job)';
  const live = await jsm.consumers.info(stream, durable).catch((error: unknown) => {
    if (/not found/i.test(String(error))) {
      throw new Error(`consumer ${durable} of stream ${stream} is missing: ${apply}`);
    }
    throw error;
  });
  const want = consumerConfig(declaration);
  const differences = (['ack_wait', 'max_deliver', 'filter_subject'] as const).flatMap((key) =>
    (live.config[key] || undefined) !== (want[key] || undefined)
      ? [`${key} ${String(live.config[key])}, declared ${String(want[key])}`]
      : [],
  );
  if (differences.length > 0) {
    throw new Error(
      `consumer ${durable} of stream ${stream} differs from its declaration (${differences.join('; ')}): ${apply}`,
    );
  }
}

/**
 * A durable pull consumer with bounded concurrency whose redelivery follows its own
 * configuration:
 * - It fetches only as many messages as it has free slots, so none waits in a local buffer
 *   while its ack deadline runs, and only once `refillWhenFree` of them are.
 * - A failed or timed-out handler is naked with its backoff step (the loop's, not the server's).
 * - A handler past its timeout is aborted and frees its slot, so hung calls cannot take all
 *   of them; a late result of it is ignored.
 * - After `maxDeliveries` a message is published to the dead-letter stream with why (a
 *   metric counts it) and terminated; it is never dropped silently.
 *
 * Order: none is guaranteed. With concurrency above one, messages run side by side; a
 * retried message comes back after later ones. Only with concurrency one and no retries are
 * messages handled in stream order. Consumers that need an order (per order, per partner)
 * build it on top, for instance from the events' aggregate versions.
 *
 * The consumer must exist as declared (`ensureConsumer`, run by the migration step): this
 * only checks it, and fails the start saying what to do if it is missing or differs.
 */
export async function startConsumer(options: ConsumerOptions): Promise<ConsumerLoop> {
  const { logger, durable, timeoutMs } = options;
  if (timeoutMs >= options.ackWaitMs) {
    throw new Error(`consumer ${durable}: timeoutMs must be shorter than ackWaitMs`);
  }
  if (options.backoffMs.length === 0 || options.maxDeliveries < 1) {
    throw new Error(`consumer ${durable}: needs a backoff step and at least one delivery`);
  }
  await requireConsumer(options.jsm, options);
  const consumer = await options.js.consumers.get(options.stream, durable);
  const letters = deadLetterSubject(options.prefix, durable);
  const unwatch = options.metrics?.watchConsumer(durable, async () => {
    const [info, deadLetters] = await Promise.all([
      consumer.info(),
      options.jsm.streams.info(deadLetterStream(options.prefix), { subjects_filter: letters }),
    ]);
    return {
      pending: info.num_pending,
      ackPending: info.num_ack_pending,
      redelivered: info.num_redelivered,
      deadLetters: deadLetters.state.subjects?.[letters] ?? 0,
    };
  });
  const count = (outcome: ConsumerOutcome, by = 1) =>
    options.metrics?.consumerMessages.inc({ consumer: durable, outcome }, by);
  // Every series from zero: an alert on increase() misses a counter's first step otherwise.
  for (const outcome of CONSUMER_OUTCOMES) count(outcome, 0);

  /** Messages taken and not yet settled (acked, naked or terminated). */
  const inHand = new Map<
    JsMsg,
    { settled: Promise<void>; handBack(graceMs: number): Promise<void> }
  >();
  let stopping = false;
  let closed = false;
  let wakeUp: (() => void) | undefined;
  let pending: { stop(): void } | undefined;

  const backoff = (attempt: number) => backoffStep(options.backoffMs, attempt);

  async function deadLetter(msg: JsMsg, reason: string): Promise<void> {
    const headers = createHeaders();
    for (const [key, values] of msg.headers ?? []) {
      if (/^nats-/i.test(key)) continue;
      for (const value of values) headers.append(key, value);
    }
    headers.set(deadLetterHeaders.stream, options.stream);
    headers.set(deadLetterHeaders.sequence, String(msg.seq));
    headers.set(deadLetterHeaders.subject, msg.subject);
    headers.set(deadLetterHeaders.deliveries, String(msg.info.deliveryCount));
    headers.set(deadLetterHeaders.reason, reason.slice(0, 1_000));
    await options.js.publish(deadLetterSubject(options.prefix, durable), msg.data, {
      headers,
      msgID: `${options.stream}:${msg.seq}`,
    });
    logger.error(
      { durable, seq: msg.seq, subject: msg.subject, deliveries: msg.info.deliveryCount, reason },
      'message dead-lettered',
    );
  }

  function take(msg: JsMsg): void {
    const attempt = msg.info.deliveryCount;
    const controller = new AbortController();
    // Set once the handler runs (early paths settle without one).
    let timer: NodeJS.Timeout | undefined = undefined;
    // The handler's run, settled either way (none yet on the early paths).
    let handlerEnded: Promise<void> = Promise.resolve();
    let markSettled!: () => void;
    const settled = new Promise<void>((resolve) => (markSettled = resolve));
    let done = false;

    /** Settle once; never after the loop closed (the connection may be gone). */
    const settle = (outcome: ConsumerOutcome, act: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      inHand.delete(msg);
      markSettled();
      wakeUp?.();
      if (closed) return;
      try {
        act();
        count(outcome);
      } catch (error) {
        // The connection closed under us: the server delivers the message again.
        logger.warn({ err: error, durable, seq: msg.seq, outcome }, 'message could not be settled');
      }
    };
    const retry = (reason: string, outcome: 'retried' | 'timed_out', delayMs: number) => {
      if (attempt >= options.maxDeliveries) {
        void recordDeadLetter(`${reason} (after ${attempt} deliveries)`);
      } else {
        settle(outcome, () => msg.nak(delayMs));
      }
    };
    const recordDeadLetter = async (reason: string) => {
      clearTimeout(timer); // the handler is done with it; only the recording remains
      try {
        await deadLetter(msg, reason);
        settle('dead_lettered', () => msg.term());
      } catch (error) {
        logger.error({ err: error, durable, seq: msg.seq }, 'dead letter not recorded; will retry');
        settle('retried', () => msg.nak(backoff(attempt)));
      }
    };

    inHand.set(msg, {
      settled,
      async handBack(graceMs) {
        controller.abort(new Error('consumer stopping'));
        // The aborted handler cleans up first: the next delivery, at once and maybe on another
        // replica, would otherwise find what it left (a lease still held) and wait it out.
        await Promise.race([handlerEnded, sleep(graceMs, undefined, { ref: false })]);
        settle('handed_back', () => msg.nak());
      },
    });
    if (stopping) {
      void inHand.get(msg)!.handBack(0);
      return;
    }
    if (attempt > options.maxDeliveries) {
      void recordDeadLetter(`not handled in ${options.maxDeliveries} deliveries`);
      return;
    }
    timer = setTimeout(() => {
      controller.abort(new Error('handler timed out'));
      logger.warn({ durable, seq: msg.seq, attempt, timeoutMs }, 'message handler timed out');
      retry('handler timed out', 'timed_out', backoff(attempt));
    }, timeoutMs);
    const work: ConsumerWork = {
      attempt,
      signal: controller.signal,
      working() {
        if (done || closed) return;
        msg.working();
        timer?.refresh();
      },
    };
    // A handler that throws before its first await is a failure like any other.
    handlerEnded = Promise.resolve(work)
      .then((w) =>
        consumeInContext(msg, durable, async () => {
          const outcome = await options.handle(msg, w);
          logger.debug({ durable, seq: msg.seq, attempt }, 'message handled');
          return outcome;
        }),
      )
      .then(
        (outcome) => {
          if (controller.signal.aborted) return; // timed out or handed back already
          if (!outcome) settle('acked', () => msg.ack());
          else if ('deadLetter' in outcome) void recordDeadLetter(outcome.deadLetter);
          else retry('handler asked for a retry', 'retried', outcome.retryInMs);
        },
        (error: unknown) => {
          if (controller.signal.aborted) return;
          logger.error({ err: error, durable, seq: msg.seq, attempt }, 'message handler failed');
          retry(
            error instanceof Error ? error.message : String(error),
            'retried',
            backoff(attempt),
          );
        },
      );
  }

  const refillAt = Math.min(options.concurrency, Math.max(1, options.refillWhenFree ?? 1));
  const loop = (async () => {
    while (!stopping) {
      const free = options.concurrency - inHand.size;
      if (free < refillAt) {
        await new Promise<void>((resolve) => (wakeUp = resolve));
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: free, expires: 2_000 });
        pending = batch;
        for await (const msg of batch) take(msg);
      } catch (error) {
        if (stopping) break;
        logger.warn({ err: error, durable }, 'fetch failed; retrying');
        await sleep(1_000);
      }
    }
  })();

  return {
    async stop(timeoutMs = 10_000) {
      stopping = true;
      unwatch?.();
      wakeUp?.();
      // End the open pull instead of waiting for it to expire.
      pending?.stop();
      const graceMs = Math.min(HAND_BACK_GRACE_MS, Math.floor(timeoutMs / 4));
      const deadline = sleep(timeoutMs - graceMs, 'deadline', { ref: false });
      await Promise.race([
        Promise.allSettled([loop, ...[...inHand.values()].map((entry) => entry.settled)]),
        deadline,
      ]);
      await Promise.all([...inHand.values()].map((entry) => entry.handBack(graceMs)));
      closed = true;
    },
  };
}
