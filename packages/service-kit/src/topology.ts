import { events, natsStreams } from '@pcp/contracts';
import {
  DeliverPolicy,
  nanos,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from 'nats';
import { defaultJetStreamSettings, type JetStreamSettings, type StreamLimits } from './config.js';
import { ensureConsumer, type ConsumerDeclaration, type RetrySchedule } from './consumer.js';
import { ensureStream, streamName } from './streams.js';
import type { Logger } from './logger.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The platform's JetStream topology, declared in one place: every stream and durable consumer
 * with its configuration. The migration step applies it as the NATS user `migrator` (or an
 * operator); services may not create or change streams or consumers (their NATS users lack
 * the rights), they only check at start that what they use exists. See
 * docs/operations.md#nats-users-and-tls.
 */
export interface JetStreamTopology {
  readonly prefix: string;
  readonly streams: readonly (Partial<StreamConfig> & { name: string; subjects: string[] })[];
  readonly consumers: readonly ConsumerDeclaration[];
}

export interface TopologySettings {
  /** Replicas and limits of new streams (default: the defaults). */
  readonly jetstream?: JetStreamSettings | undefined;
  /** The catalog's ingest lease (CATALOG_INGEST_LEASE_MS): its consumer's ack wait. */
  readonly ingestLeaseMs?: number | undefined;
}

/** The catalog's CATALOG_INGEST_LEASE_MS when unset. */
export const DEFAULT_INGEST_LEASE_MS = 30_000;

/** The platform's durable consumers, by what they do. */
export const durables = {
  storesCatalogActivated: 'stores-catalog-activated',
  catalogIngest: 'catalog-ingest',
  orderingWebhookDeliveries: 'ordering-webhook-deliveries',
  orderingStoreWebhookDeliveries: 'ordering-store-webhook-deliveries',
} as const;

/**
 * How ordering's recorder retries an event it could not record (one insert: a pool timing
 * out, a database restarting or failing over): soon at first, then every minute, for about
 * eight minutes of failures. Then the event is dead-lettered (alert PcpOrderEventsDeadLettered)
 * and waits for an operator's `dead-letters-republish`.
 */
export const WEBHOOK_RECORDER_SCHEDULE: RetrySchedule = {
  ackWaitMs: 30_000,
  timeoutMs: 10_000,
  backoffMs: [1_000, 5_000, 15_000, 30_000, 60_000],
  maxDeliveries: 12,
};

/** Stores applying a catalog activation (the database unreachable, say). */
const STORES_ACTIVATION_SCHEDULE: RetrySchedule = {
  ackWaitMs: 30_000,
  timeoutMs: 10_000,
  backoffMs: [1_000, 5_000, 30_000, 120_000, 600_000],
  maxDeliveries: 20,
};

/**
 * An ingest message is leased for `leaseMs`; the worker's heartbeat signals working() every
 * third of it, and a stalled process misses it. Attempts are counted per run in the database,
 * and a run over its partner's cap waits parked in Postgres (its message acked), so a message
 * is redelivered only after a crash or a transient failure; 50 deliveries stop a runaway one
 * (the reconciler publishes its run again).
 */
export function catalogIngestSchedule(leaseMs: number): RetrySchedule {
  return {
    ackWaitMs: leaseMs,
    timeoutMs: Math.floor(leaseMs * 0.8),
    backoffMs: [5_000, 15_000, 60_000],
    maxDeliveries: 50,
  };
}

/** A stream's replicas and limits, as a StreamConfig's fields. */
export function streamLimits(settings: JetStreamSettings, limits: StreamLimits) {
  return {
    num_replicas: settings.replicas,
    max_age: nanos(limits.maxAgeMs),
    max_bytes: limits.maxBytes,
  };
}

/** The topology of the deployment (or test run) `prefix`. */
export function jetStreamTopology(
  prefix: string,
  settings: TopologySettings = {},
): JetStreamTopology {
  const jetstream = settings.jetstream ?? defaultJetStreamSettings;
  const name = (stream: string) => streamName(prefix, stream);
  const common = {
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: nanos(120_000),
  };
  return assertNoCardCapture({
    prefix,
    streams: [
      // Every `<prefix>.events.>` subject (a week by default).
      {
        name: name(natsStreams.events),
        subjects: [`${prefix}.events.>`],
        ...common,
        ...streamLimits(jetstream, jetstream.events),
      },
      // The catalog's ingest work queue: any number of replicas share it.
      {
        name: name(natsStreams.catalogIngest),
        subjects: [`${prefix}.catalog.ingest.requested`],
        ...common,
        retention: RetentionPolicy.Workqueue,
        ...streamLimits(jetstream, jetstream.ingest),
      },
      // Dead letters wait for an operator: a month, within a bounded size (oldest go first).
      {
        name: name(natsStreams.deadLetters),
        subjects: [`${prefix}.dead-letters.>`],
        ...common,
        ...streamLimits(jetstream, jetstream.deadLetters),
      },
    ],
    consumers: [
      {
        stream: name(natsStreams.events),
        durable: durables.storesCatalogActivated,
        config: {
          filter_subject: `${prefix}.${events.catalogActivated.subject}`,
          deliver_policy: DeliverPolicy.All,
        },
        ...STORES_ACTIVATION_SCHEDULE,
      },
      {
        stream: name(natsStreams.catalogIngest),
        durable: durables.catalogIngest,
        config: { max_ack_pending: 1_000 },
        ...catalogIngestSchedule(settings.ingestLeaseMs ?? DEFAULT_INGEST_LEASE_MS),
      },
      {
        stream: name(natsStreams.events),
        durable: durables.orderingWebhookDeliveries,
        config: {
          filter_subject: `${prefix}.${events.orderStatusChanged.subject}`,
          deliver_policy: DeliverPolicy.All,
        },
        ...WEBHOOK_RECORDER_SCHEDULE,
      },
      // Store events fanned out to the subscribed partners' webhooks: a consumer of its own,
      // so a fan-out never holds up order events. The same schedule: the dispatchers' gap
      // grace is derived from it.
      {
        stream: name(natsStreams.events),
        durable: durables.orderingStoreWebhookDeliveries,
        config: {
          filter_subject: `${prefix}.${events.storeChanged.subject}`,
          deliver_policy: DeliverPolicy.All,
        },
        ...WEBHOOK_RECORDER_SCHEDULE,
      },
    ],
  });
}

/** The declaration of `durable` in `topology`. */
export function topologyConsumer(
  topology: JetStreamTopology,
  durable: string,
): ConsumerDeclaration {
  const consumer = topology.consumers.find((candidate) => candidate.durable === durable);
  if (!consumer) throw new Error(`the JetStream topology declares no consumer ${durable}`);
  return consumer;
}

/** Whether two subjects (wildcards allowed in either) can match one subject. */
export function subjectsOverlap(a: string, b: string): boolean {
  const left = a.split('.');
  const right = b.split('.');
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const [x, y] = [left[i], right[i]];
    if (x === '>' || y === '>') return x !== undefined && y !== undefined;
    if (x === undefined || y === undefined) return false;
    if (x !== '*' && y !== '*' && x !== y) return false;
  }
  return true;
}

/**
 * Card data travels on `<prefix>.payments.>` (the vault request): no stream may capture it,
 * or whoever reads the stream reads card numbers.
 */
export function assertNoCardCapture<T extends Pick<JetStreamTopology, 'prefix' | 'streams'>>(
  topology: T,
): T {
  const payments = `${topology.prefix}.payments.>`;
  for (const stream of topology.streams) {
    const captured = stream.subjects.filter((subject) => subjectsOverlap(subject, payments));
    if (captured.length > 0) {
      throw new Error(`stream ${stream.name} would capture ${payments}: ${captured.join(', ')}`);
    }
  }
  return topology;
}

/**
 * Create what is missing and bring every consumer to its declaration. Streams that exist get
 * only subjects they lack; their replicas and limits stay as an operator set them.
 */
export async function applyJetStreamTopology(
  jsm: JetStreamManager,
  topology: JetStreamTopology,
  logger?: Logger,
): Promise<void> {
  assertNoCardCapture(topology);
  for (const stream of topology.streams) await ensureStream(jsm, stream, logger);
  for (const consumer of topology.consumers) await ensureConsumer(jsm, consumer);
  logger?.info(
    {
      prefix: topology.prefix,
      streams: topology.streams.length,
      consumers: topology.consumers.length,
    },
    'JetStream topology applied',
  );
}

/** How long a starting service waits for the migration step to create its streams. */
const STREAMS_WAIT_MS = 30_000;
const STREAMS_POLL_MS = 200;

/**
 * Resolve once the streams exist: a service cannot create them, the migration step does
 * (`npm run migrate`, the migration Job), and it may still be at it while services start (a
 * local run migrates each service as it starts). Past `waitMs` it fails, so readiness never
 * passes without them.
 */
export async function requireStreams(
  jsm: JetStreamManager,
  names: readonly string[],
  options: { waitMs?: number; logger?: Logger } = {},
): Promise<void> {
  const deadline = Date.now() + (options.waitMs ?? STREAMS_WAIT_MS);
  for (const name of names) {
    let told = false;
    for (;;) {
      try {
        await jsm.streams.info(name);
        break;
      } catch (error) {
        if (!/stream not found/i.test(String(error))) throw error;
        if (Date.now() >= deadline) {
          throw new Error(
            `stream ${name} is missing: apply the JetStream topology (npm run migrate, the migration Job)`,
          );
        }
        if (!told) options.logger?.info({ stream: name }, 'waiting for the JetStream topology');
        told = true;
        await sleep(STREAMS_POLL_MS);
      }
    }
  }
}
