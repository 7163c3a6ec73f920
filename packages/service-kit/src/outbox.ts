import { sql, type Generated, type JSONColumnType, type Kysely } from 'kysely';
import {
  ErrorCode,
  headers as createHeaders,
  NatsError,
  type JetStreamClient,
  type PubAck,
} from 'nats';
import { v5 as uuidV5 } from 'uuid';
import { detachFromRequest } from './log-context.js';
import type { Logger } from './logger.js';
import { outboxEventHeaders, rememberEventOrigin } from './message-tracing.js';
import type { ServiceMetrics } from './metrics.js';

/**
 * Events written in the same transaction as the change they announce
 * (docs/conventions.md#messaging), one per version of an aggregate, published in `sequence` order.
 */
export interface OutboxTable {
  /**
   * Publish order. Taken when the row is inserted, which the writer does after locking its
   * aggregate, so of two events of one aggregate the one committed first has the lower.
   */
  sequence: Generated<number>;
  event_id: string;
  /** Full subject, deployment prefix included. */
  subject: string;
  aggregate_type: string;
  aggregate_id: string;
  aggregate_version: number;
  payload: JSONColumnType<EventEnvelope, string, never>;
  created_at: Generated<Date>;
  published_at: Date | null;
  /** Set when the row can never be published (see `park_reason`); the relay skips it. */
  parked_at: Date | null;
  park_reason: string | null;
}

export interface OutboxDatabase {
  outbox: OutboxTable;
}

/**
 * For the migration that creates a service's `outbox` table in its own schema. Later
 * changes to the table ship as migrations of their own in each service that has one.
 */
export async function createOutboxTable(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('outbox')
    .addColumn('sequence', 'bigint', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('event_id', 'uuid', (col) => col.notNull().unique())
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('aggregate_type', 'text', (col) => col.notNull())
    .addColumn('aggregate_id', 'text', (col) => col.notNull())
    .addColumn('aggregate_version', 'bigint', (col) => col.notNull())
    .addColumn('payload', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('published_at', 'timestamptz')
    .addColumn('parked_at', 'timestamptz')
    .addColumn('park_reason', 'text')
    .addUniqueConstraint('outbox_aggregate_version_key', [
      'aggregate_type',
      'aggregate_id',
      'aggregate_version',
    ])
    .execute();
  await createOutboxPendingIndex(db);
}

/** The relay's scan: unpublished, unparked rows in sequence order. */
export async function createOutboxPendingIndex(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('outbox_pending_idx')
    .on('outbox')
    .column('sequence')
    .where(sql.ref('published_at'), 'is', null)
    .where(sql.ref('parked_at'), 'is', null)
    .execute();
}

/** The thing an event is about, at the version the change gave it. */
export interface AggregateVersion {
  /** A name unique across the platform, such as `order` or `store-catalog`. */
  readonly type: string;
  readonly id: string;
  /** 1 for the aggregate's first event, then one more for each change. */
  readonly version: number;
}

/**
 * The envelope every event travels in (docs/conventions.md#messaging); `version` is its
 * aggregate's.
 */
export interface EventEnvelope<T extends string = string, D = unknown> {
  readonly id: string;
  readonly type: T;
  readonly occurredAt: string;
  readonly version: number;
  readonly data: D;
}

/** Namespace of the platform's event ids (UUID v5), fixed forever. */
const EVENT_ID_NAMESPACE = '2b0f7c1e-8d57-4c8e-9a43-5f3cf6d1a0b9';

/**
 * The id of an aggregate's event at one version: the same on every publish of it, so
 * JetStream's dedupe and consumers' idempotency keys see one event, however often sent.
 */
export function eventIdOf(aggregate: AggregateVersion): string {
  return uuidV5(`${aggregate.type}\n${aggregate.id}\n${aggregate.version}`, EVENT_ID_NAMESPACE);
}

/**
 * Record an event inside the caller's transaction and return its envelope. Call it after
 * the change has locked the aggregate's row (the update that sets its new version does):
 * that is what makes the outbox's order that of the commits. One event per version; a
 * second for the same version fails the transaction.
 */
export async function insertOutboxEvent<DB extends OutboxDatabase, T extends string, D>(
  trx: Kysely<DB>,
  event: OutboxEvent<T, D>,
): Promise<EventEnvelope<T, D>> {
  const [envelope] = await insertOutboxEvents(trx, [event]);
  return envelope!;
}

/** An event as its writer records it in the outbox. */
export interface OutboxEvent<T extends string, D> {
  subject: string;
  type: T;
  aggregate: AggregateVersion;
  data: D;
  occurredAt?: Date;
}

/**
 * `insertOutboxEvent` for several events in one statement (a batch of changes, each of its
 * own aggregate, all locked first), in the order given: each gets the next sequence.
 */
export async function insertOutboxEvents<DB extends OutboxDatabase, T extends string, D>(
  trx: Kysely<DB>,
  events: readonly OutboxEvent<T, D>[],
): Promise<EventEnvelope<T, D>[]> {
  if (events.length === 0) return [];
  const rows = events.map((event) => outboxRowOf(event));
  // Kysely's types are invariant in DB; any database with an outbox table will do.
  await (trx as unknown as Kysely<OutboxDatabase>)
    .insertInto('outbox')
    .values(rows.map(({ values }) => values))
    .execute();
  return rows.map(({ envelope }) => envelope);
}

/** An outbox row's columns, as {@link outboxRowOf} gives them for a statement of the caller's. */
export interface OutboxRowValues {
  readonly event_id: string;
  readonly subject: string;
  readonly aggregate_type: string;
  readonly aggregate_id: string;
  readonly aggregate_version: number;
  /** The envelope's JSON text. */
  readonly payload: string;
}

/**
 * The row {@link insertOutboxEvent} inserts, and its envelope, for a caller that writes it in
 * a statement of its own (the same rules: after the aggregate's row is locked, one per version).
 */
export function outboxRowOf<T extends string, D>(
  event: OutboxEvent<T, D>,
): { values: OutboxRowValues; envelope: EventEnvelope<T, D> } {
  const { aggregate } = event;
  const envelope: EventEnvelope<T, D> = {
    id: eventIdOf(aggregate),
    type: event.type,
    occurredAt: (event.occurredAt ?? new Date()).toISOString(),
    version: aggregate.version,
    data: event.data,
  };
  rememberEventOrigin(envelope.id);
  const values = {
    event_id: envelope.id,
    subject: event.subject,
    aggregate_type: aggregate.type,
    aggregate_id: aggregate.id,
    aggregate_version: aggregate.version,
    payload: JSON.stringify(envelope),
  };
  return { values, envelope };
}

const BATCH = 100;
const RETENTION_DAYS = 7;
const PRUNE_INTERVAL_MS = 3_600_000;
/** Nudges within this share one batch (commits close together: one relay transaction). */
const NUDGE_COALESCE_MS = 2;

interface PendingRow {
  sequence: number;
  event_id: string;
  subject: string;
  aggregate_type: string;
  aggregate_id: string;
  /** The envelope as stored: published as it is. */
  payload: string;
}

type PublishOutcome =
  { kind: 'published'; sequence: number } | { kind: 'parked'; sequence: number; reason: string };

/**
 * Publishes outbox rows to JetStream in sequence order, at least once (the event id is the
 * message id, so JetStream drops a re-publish within its window and consumers dedupe after
 * it), and marks them.
 *
 * - One relay publishes at a time across replicas: each batch runs under a transaction-level
 *   advisory lock of the schema's outbox, so batches never interleave; the others stand by.
 * - Events of one aggregate go out one after another; different aggregates in a batch go out
 *   concurrently. A transient failure stops that aggregate for this batch, so no later event
 *   of it is published before an earlier one.
 * - A row that can never be published (no stream takes its subject, larger than a message
 *   may be) is parked with its reason, counted, and skipped; rows behind it go on.
 *   Consumers see the gap in that aggregate's versions.
 *
 * `nudge()` publishes right after a commit instead of waiting for the next tick; after
 * `stop()` the relay publishes nothing more.
 */
export function createOutboxRelay<DB extends OutboxDatabase>(options: {
  db: Kysely<DB>;
  js: JetStreamClient;
  logger: Logger;
  metrics?: ServiceMetrics;
  intervalMs?: number;
}) {
  const db = options.db as unknown as Kysely<OutboxDatabase>;
  const { logger } = options;
  const encoder = new TextEncoder();
  let timer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let coalescing: Promise<void> | undefined;

  /** Publishes one batch; the number of rows it settled, or undefined on standby. */
  async function publishBatch(): Promise<number | undefined> {
    const outcomes = await db.transaction().execute(async (trx) => {
      // The marks commit without waiting for the WAL flush: one lost in a database crash is a
      // re-publish, which JetStream drops by its msgID within the events streams' 120 s
      // duplicate window (topology.ts), and consumers dedupe by event id after it.
      const { rows: lock } = await sql<{ held: boolean }>`
        select pg_try_advisory_xact_lock(hashtextextended(current_schema() || '.outbox', 0)) as held,
               set_config('synchronous_commit', 'off', true)
      `.execute(trx);
      if (!lock[0]?.held) return undefined;
      const rows: PendingRow[] = await trx
        .selectFrom('outbox')
        .select(['sequence', 'event_id', 'subject', 'aggregate_type', 'aggregate_id'])
        .select(sql<string>`payload::text`.as('payload'))
        .where('published_at', 'is', null)
        .where('parked_at', 'is', null)
        .orderBy('sequence')
        .limit(BATCH)
        .execute();
      const byAggregate = new Map<string, PendingRow[]>();
      for (const row of rows) {
        const key = `${row.aggregate_type}\n${row.aggregate_id}`;
        const list = byAggregate.get(key);
        if (list) list.push(row);
        else byAggregate.set(key, [row]);
      }
      const outcomes = (
        await Promise.all([...byAggregate.values()].map((list) => publishInOrder(list)))
      ).flat();
      const published = outcomes.flatMap((o) => (o.kind === 'published' ? [o.sequence] : []));
      if (published.length > 0) {
        await trx
          .updateTable('outbox')
          .set({ published_at: sql<Date>`now()` })
          .where('sequence', 'in', published)
          .execute();
      }
      for (const outcome of outcomes) {
        if (outcome.kind !== 'parked') continue;
        await trx
          .updateTable('outbox')
          .set({ parked_at: sql<Date>`now()`, park_reason: outcome.reason })
          .where('sequence', '=', outcome.sequence)
          .execute();
      }
      return outcomes;
    });
    if (!outcomes) return undefined;
    for (const outcome of outcomes) options.metrics?.outboxEvents.inc({ outcome: outcome.kind });
    return outcomes.length;
  }

  /** One aggregate's rows, in order, until one fails for a reason that may pass. */
  async function publishInOrder(rows: PendingRow[]): Promise<PublishOutcome[]> {
    const outcomes: PublishOutcome[] = [];
    for (const row of rows) {
      try {
        await publish(row);
        outcomes.push({ kind: 'published', sequence: row.sequence });
      } catch (error) {
        const reason = await permanentFailure(row.subject, error);
        if (reason === undefined) {
          logger.warn(
            { err: error, eventId: row.event_id, subject: row.subject },
            'outbox publish failed; will retry',
          );
          break;
        }
        logger.error(
          { err: error, eventId: row.event_id, subject: row.subject, reason },
          'outbox event can never be published; parked',
        );
        outcomes.push({ kind: 'parked', sequence: row.sequence, reason });
      }
    }
    return outcomes;
  }

  function publish(row: PendingRow): Promise<PubAck> {
    return options.js.publish(row.subject, encoder.encode(row.payload), {
      msgID: row.event_id,
      // The consumers' work continues the trace of the request that wrote the event.
      headers: outboxEventHeaders(row.event_id, row.subject, createHeaders()),
    });
  }

  /** Why this failure will repeat forever, or undefined if a later try may succeed. */
  async function permanentFailure(subject: string, error: unknown): Promise<string | undefined> {
    if (!(error instanceof NatsError)) return undefined;
    if (error.code === (ErrorCode.MaxPayloadExceeded as string)) {
      return 'larger than the NATS max payload';
    }
    if (error.api_error?.err_code === MESSAGE_EXCEEDS_MAXIMUM) {
      return `larger than its stream's max message size`;
    }
    if (error.code === (ErrorCode.NoResponders as string)) {
      // No responders also means JetStream is restarting: park only on the server's word.
      try {
        const jsm = await options.js.jetstreamManager(false);
        await jsm.streams.find(subject);
      } catch (lookup) {
        if (lookup instanceof Error && /no stream matches subject/i.test(lookup.message)) {
          return 'no stream takes its subject';
        }
      }
    }
    return undefined;
  }

  /** Published rows older than the retention are no longer needed. */
  async function prune(): Promise<void> {
    await db
      .deleteFrom('outbox')
      .where('published_at', '<', new Date(Date.now() - RETENTION_DAYS * 86_400_000))
      .execute();
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      try {
        let settled: number | undefined;
        do settled = await publishBatch();
        while (settled === BATCH && !stopped);
      } catch (error) {
        logger.warn({ err: error }, 'outbox relay failed; will retry');
      }
    } while (again && !stopped);
  }

  function run(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    // A nudge comes from a request's handler; the batch is not that request's work.
    running = detachFromRequest(drain).finally(() => (running = undefined));
    return running;
  }

  return {
    start() {
      stopped = false;
      timer = setInterval(() => void run(), options.intervalMs ?? 1_000);
      pruneTimer = setInterval(() => {
        prune().catch((error: unknown) => logger.warn({ err: error }, 'outbox prune failed'));
      }, PRUNE_INTERVAL_MS);
      void run();
    },
    /**
     * Publish now (after a commit that wrote events), together with the nudges of the next
     * few milliseconds. Does nothing once stopped.
     */
    nudge(): Promise<void> {
      coalescing ??= new Promise((resolve) => setTimeout(resolve, NUDGE_COALESCE_MS)).then(() => {
        coalescing = undefined;
        return run();
      });
      return coalescing;
    },
    /** Stop the timers and wait for the batch being published; later nudges do nothing. */
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearInterval(pruneTimer);
      await running;
    },
  };
}
export type OutboxRelay = ReturnType<typeof createOutboxRelay>;

/** JetStream's "message size exceeds maximum allowed" (the stream's max_msg_size). */
const MESSAGE_EXCEEDS_MAXIMUM = 10054;
