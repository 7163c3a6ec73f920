import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A durable consumer's backlog, from its consumer info. */
export interface ConsumerBacklog {
  /** Messages in the stream the consumer has not been delivered yet (`num_pending`). */
  readonly pending: number;
  /** Delivered and not yet acked (`num_ack_pending`). */
  readonly ackPending: number;
  /** Delivered more than once and not yet acked (`num_redelivered`). */
  readonly redelivered: number;
  /** Its dead letters waiting in the dead-letter stream for an operator. */
  readonly deadLetters: number;
}

export interface ServiceMetrics {
  readonly registry: Registry;
  /** Time a handler takes to answer a subject, by outcome (ok or the error code). */
  readonly natsHandlerDuration: Histogram<'subject' | 'outcome'>;
  /** Round trip of a request this process sends, by outcome. */
  readonly natsRequestDuration: Histogram<'subject' | 'outcome'>;
  /** Outbox rows the relay settled: `published`, or `parked` (can never be published). */
  readonly outboxEvents: Counter<'outcome'>;
  /**
   * Deliveries a JetStream consumer settled, by durable and outcome: `acked`, `retried`
   * (failed, redelivered after its backoff), `timed_out` (also retried), `dead_lettered` or
   * `handed_back` (at shutdown). Each durable's series start at zero when it starts.
   */
  readonly consumerMessages: Counter<'consumer' | 'outcome'>;
  /**
   * Report a durable consumer's backlog on each scrape (`pcp_consumer_backlog_messages`, and
   * its waiting dead letters as `pcp_consumer_dead_letters`); `read` is called at most once
   * per few seconds. Returns the call that stops it.
   */
  watchConsumer(consumer: string, read: () => Promise<ConsumerBacklog>): () => void;
}

/**
 * How long a consumer's backlog reading serves scrapes: each reading is a JetStream API
 * call, and several Prometheus servers (or a dashboard's refresh) may scrape at once.
 */
const BACKLOG_CACHE_MS = 5_000;

interface BacklogSource {
  read(): Promise<ConsumerBacklog>;
  last?: { at: number; reading: Promise<ConsumerBacklog | undefined> };
}

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * One registry per service instance (tests run several in one process). Process metrics
 * are opt-in because they are global to the process.
 */
export function createMetrics(
  service: string,
  options: { processMetrics?: boolean } = {},
): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const backlogSources = new Map<string, BacklogSource>();
  const reading = (source: BacklogSource) => {
    if (!source.last || Date.now() - source.last.at >= BACKLOG_CACHE_MS) {
      // A failed reading (NATS away) leaves the consumer out of this scrape, not the scrape.
      source.last = { at: Date.now(), reading: source.read().catch(() => undefined) };
    }
    return source.last.reading;
  };
  const readAll = () =>
    Promise.all(
      [...backlogSources].map(
        async ([consumer, source]) => [consumer, await reading(source)] as const,
      ),
    );
  new Gauge({
    name: 'pcp_consumer_backlog_messages',
    help: 'A durable consumer’s messages by state: pending (not yet delivered), ack_pending (delivered, not acked), redelivered (delivered more than once, not acked)',
    labelNames: ['consumer', 'state'],
    registers: [registry],
    async collect() {
      const readings = await readAll();
      this.reset();
      for (const [consumer, backlog] of readings) {
        if (!backlog) continue;
        this.set({ consumer, state: 'pending' }, backlog.pending);
        this.set({ consumer, state: 'ack_pending' }, backlog.ackPending);
        this.set({ consumer, state: 'redelivered' }, backlog.redelivered);
      }
    },
  });
  new Gauge({
    name: 'pcp_consumer_dead_letters',
    help: 'A durable consumer’s dead letters waiting in the dead-letter stream for an operator (republish or discard them)',
    labelNames: ['consumer'],
    registers: [registry],
    async collect() {
      const readings = await readAll();
      this.reset();
      for (const [consumer, backlog] of readings) {
        if (backlog) this.set({ consumer }, backlog.deadLetters);
      }
    },
  });
  return {
    registry,
    natsHandlerDuration: new Histogram({
      name: 'pcp_nats_handler_duration_seconds',
      help: 'Time to answer a NATS request, by subject and outcome',
      labelNames: ['subject', 'outcome'],
      buckets: latencyBuckets,
      registers: [registry],
    }),
    natsRequestDuration: new Histogram({
      name: 'pcp_nats_request_duration_seconds',
      help: 'Round trip of an outgoing NATS request, by subject and outcome',
      labelNames: ['subject', 'outcome'],
      buckets: latencyBuckets,
      registers: [registry],
    }),
    outboxEvents: new Counter({
      name: 'pcp_outbox_events_total',
      help: 'Outbox events the relay settled, by outcome (published, parked)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    consumerMessages: new Counter({
      name: 'pcp_consumer_messages_total',
      help: 'JetStream deliveries settled, by consumer and outcome (acked, retried, timed_out, dead_lettered, handed_back)',
      labelNames: ['consumer', 'outcome'],
      registers: [registry],
    }),
    watchConsumer(consumer, read) {
      const source: BacklogSource = { read };
      backlogSources.set(consumer, source);
      return () => {
        if (backlogSources.get(consumer) === source) backlogSources.delete(consumer);
      };
    },
  };
}

export { latencyBuckets };
