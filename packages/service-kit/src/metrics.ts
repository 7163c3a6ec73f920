import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

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
   * (failed, redelivered after its backoff), `timed_out` (also retried) or `dead_lettered`.
   */
  readonly consumerMessages: Counter<'consumer' | 'outcome'>;
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
      help: 'JetStream deliveries settled, by consumer and outcome (acked, retried, timed_out, dead_lettered)',
      labelNames: ['consumer', 'outcome'],
      registers: [registry],
    }),
  };
}

export { latencyBuckets };
