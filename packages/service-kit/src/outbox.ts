import { sql, type ColumnType, type Generated, type Kysely } from 'kysely';
import type { JetStreamClient } from 'nats';
import { randomUUID } from 'node:crypto';
import type { Logger } from './logger.js';

/** Events written in the same transaction as the change they announce (STYLE §7). */
export interface OutboxTable {
  event_id: string;
  /** Full subject, deployment prefix included. */
  subject: string;
  payload: ColumnType<unknown, string, never>;
  created_at: Generated<Date>;
  published_at: Date | null;
}

export interface OutboxDatabase {
  outbox: OutboxTable;
}

/** For a service's migration: the `outbox` table in its own schema. */
export async function createOutboxTable(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('outbox')
    .addColumn('event_id', 'uuid', (col) => col.primaryKey())
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('payload', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('published_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('outbox_unpublished_idx')
    .on('outbox')
    .column('created_at')
    .where(sql.ref('published_at'), 'is', null)
    .execute();
}

/** The envelope of a new event (STYLE §6); its id is also the JetStream message id. */
export function newEvent<T extends string, D>(type: T, data: D) {
  return {
    id: randomUUID(),
    type,
    occurredAt: new Date().toISOString(),
    version: 1 as const,
    data,
  };
}

/** Record an event inside the caller's transaction. */
export async function insertOutboxEvent<DB extends OutboxDatabase>(
  trx: Kysely<DB>,
  subject: string,
  event: { id: string },
): Promise<void> {
  // Kysely's types are invariant in DB; any database with an outbox table will do.
  await (trx as unknown as Kysely<OutboxDatabase>)
    .insertInto('outbox')
    .values({ event_id: event.id, subject, payload: JSON.stringify(event) })
    .execute();
}

const BATCH = 100;
const RETENTION_DAYS = 7;
const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * Publishes outbox rows to JetStream in order, at least once (the message id lets JetStream
 * drop a re-publish), then marks them. Replicas share the work with SKIP LOCKED. `nudge()`
 * publishes right after a commit instead of waiting for the next tick.
 */
export function createOutboxRelay<DB extends OutboxDatabase>(options: {
  db: Kysely<DB>;
  js: JetStreamClient;
  logger: Logger;
  intervalMs?: number;
}) {
  const db = options.db as unknown as Kysely<OutboxDatabase>;
  const encoder = new TextEncoder();
  let timer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  async function publishPending(): Promise<number> {
    return db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('outbox')
        .select(['event_id', 'subject', 'payload'])
        .where('published_at', 'is', null)
        .orderBy('created_at')
        .limit(BATCH)
        .forUpdate()
        .skipLocked()
        .execute();
      for (const row of rows) {
        await options.js.publish(row.subject, encoder.encode(JSON.stringify(row.payload)), {
          msgID: row.event_id,
        });
      }
      if (rows.length > 0) {
        await trx
          .updateTable('outbox')
          .set({ published_at: new Date() })
          .where(
            'event_id',
            'in',
            rows.map((row) => row.event_id),
          )
          .execute();
      }
      return rows.length;
    });
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
        while ((await publishPending()) === BATCH);
      } catch (error) {
        options.logger.warn({ err: error }, 'outbox publish failed; will retry');
      }
    } while (again);
  }

  function run(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = drain().finally(() => (running = undefined));
    return running;
  }

  return {
    start() {
      timer = setInterval(() => void run(), options.intervalMs ?? 1_000);
      pruneTimer = setInterval(() => {
        prune().catch((error: unknown) =>
          options.logger.warn({ err: error }, 'outbox prune failed'),
        );
      }, PRUNE_INTERVAL_MS);
      void run();
    },
    /** Publish now (after a commit that wrote events). */
    nudge(): Promise<void> {
      return run();
    },
    async stop() {
      clearInterval(timer);
      clearInterval(pruneTimer);
      await running;
    },
  };
}
export type OutboxRelay = ReturnType<typeof createOutboxRelay>;
