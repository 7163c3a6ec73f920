import {
  AckPolicy,
  nanos,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
} from 'nats';
import type { Logger } from './logger.js';

/** Stream names cannot hold dots; they carry the deployment prefix like subjects do. */
export const streamName = (prefix: string, name: string) => `${prefix}_${name}`;

/** Create the stream, or bring an existing one to this config (safe from many replicas). */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string; subjects: string[] },
): Promise<void> {
  try {
    await jsm.streams.add(config);
  } catch (error) {
    if (!/already in use/i.test(String(error))) throw error;
    await jsm.streams.update(config.name, config);
  }
}

/** The platform's event stream: every `<prefix>.events.>` subject, kept a week. */
export async function ensureEventsStream(jsm: JetStreamManager, prefix: string): Promise<string> {
  const name = streamName(prefix, 'events');
  await ensureStream(jsm, {
    name,
    subjects: [`${prefix}.events.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(7 * 24 * 3_600_000),
    duplicate_window: nanos(120_000),
  });
  return name;
}

export interface ConsumerLoop {
  /** Stop pulling, then wait (up to `timeoutMs`) for messages being handled. */
  stop(timeoutMs?: number): Promise<void>;
}

/**
 * A durable pull consumer with bounded concurrency. It fetches only as many messages as it
 * has free slots, so no message waits in a local buffer while its ack deadline runs. The
 * handler acks, naks (with a delay) or terms; one that throws gets a delayed nak.
 */
export async function startConsumer(options: {
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  durable: string;
  config: Partial<ConsumerConfig>;
  concurrency: number;
  logger: Logger;
  handle: (msg: JsMsg) => Promise<void>;
}): Promise<ConsumerLoop> {
  const config = {
    ...options.config,
    durable_name: options.durable,
    ack_policy: AckPolicy.Explicit,
  };
  try {
    await options.jsm.consumers.add(options.stream, config);
  } catch (error) {
    if (!/already in use|exists/i.test(String(error))) throw error;
    await options.jsm.consumers.update(options.stream, options.durable, config);
  }
  const consumer = await options.js.consumers.get(options.stream, options.durable);
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let wakeUp: (() => void) | undefined;
  let pending: { stop(): void } | undefined;

  const loop = (async () => {
    while (!stopped) {
      const free = options.concurrency - inFlight.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (wakeUp = resolve));
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: free, expires: 2_000 });
        pending = batch;
        for await (const msg of batch) {
          const work = options
            .handle(msg)
            .catch((error: unknown) => {
              options.logger.error({ err: error, subject: msg.subject }, 'message handler failed');
              msg.nak(5_000);
            })
            .finally(() => {
              inFlight.delete(work);
              wakeUp?.();
            });
          inFlight.add(work);
        }
      } catch (error) {
        if (stopped) break;
        options.logger.warn({ err: error, durable: options.durable }, 'fetch failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  })();

  return {
    async stop(timeoutMs = 10_000) {
      stopped = true;
      wakeUp?.();
      // End the open pull instead of waiting for it to expire.
      pending?.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([loop, ...inFlight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
