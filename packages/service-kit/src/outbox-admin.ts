import { sql, type Kysely } from 'kysely';
import {
  AdminError,
  AdminUsageError,
  adminCommand,
  integerOption,
  type AdminCommands,
} from './admin.js';
import type { OutboxDatabase } from './outbox.js';

/** A parked outbox row as operators see it: where it goes and why it is stuck, never its data. */
export interface ParkedEvent {
  readonly sequence: number;
  readonly eventId: string;
  readonly subject: string;
  readonly aggregate: { readonly type: string; readonly id: string; readonly version: number };
  readonly createdAt: string;
  readonly parkedAt: string;
  readonly reason: string | null;
}

/** Rows `outbox-list` shows by default and at most. */
export const OUTBOX_LIST_LIMIT = { default: 20, max: 200 } as const;
/** Parked rows one `outbox-republish --all` hands back at most. */
export const OUTBOX_RELEASE_MAX = 1_000;

const parkedColumns = [
  'sequence',
  'event_id',
  'subject',
  'aggregate_type',
  'aggregate_id',
  'aggregate_version',
  'created_at',
  'parked_at',
  'park_reason',
] as const;

interface ParkedRow {
  sequence: number;
  event_id: string;
  subject: string;
  aggregate_type: string;
  aggregate_id: string;
  aggregate_version: number;
  created_at: Date;
  parked_at: Date | null;
  park_reason: string | null;
}

const asParkedEvent = (row: ParkedRow): ParkedEvent => ({
  sequence: row.sequence,
  eventId: row.event_id,
  subject: row.subject,
  aggregate: { type: row.aggregate_type, id: row.aggregate_id, version: row.aggregate_version },
  createdAt: row.created_at.toISOString(),
  parkedAt: (row.parked_at ?? row.created_at).toISOString(),
  reason: row.park_reason,
});

/** How many rows are parked, and how many wait for the relay (and since when). */
async function outboxCounts(db: Kysely<OutboxDatabase>) {
  const row = await db
    .selectFrom('outbox')
    .select([
      sql<number>`count(*) filter (where parked_at is not null)::int`.as('parked'),
      sql<number>`count(*) filter (where parked_at is null and published_at is null)::int`.as(
        'pending',
      ),
      sql<Date | null>`min(created_at) filter (where parked_at is null and published_at is null)`.as(
        'oldest_pending',
      ),
    ])
    .where('published_at', 'is', null)
    .executeTakeFirstOrThrow();
  return {
    parked: row.parked,
    pending: row.pending,
    oldestPendingAt: row.oldest_pending?.toISOString() ?? null,
  };
}

/** The oldest `limit` parked rows (never their payload), with the table's counts. */
export async function listParkedEvents<DB extends OutboxDatabase>(
  dbOfService: Kysely<DB>,
  limit: number,
) {
  const db = dbOfService as unknown as Kysely<OutboxDatabase>;
  const rows = await db
    .selectFrom('outbox')
    .select(parkedColumns)
    .where('parked_at', 'is not', null)
    .orderBy('sequence')
    .limit(limit)
    .execute();
  return { ...(await outboxCounts(db)), events: rows.map(asParkedEvent) };
}

/**
 * Hand parked rows back to the relay (their `parked_at` cleared): the one at `sequence`, or
 * the oldest `limit`. The relay of a running replica publishes them within its interval;
 * a row whose cause remains is parked again.
 */
export async function releaseParkedEvents<DB extends OutboxDatabase>(
  dbOfService: Kysely<DB>,
  which: { sequence: number } | { limit: number },
) {
  const db = dbOfService as unknown as Kysely<OutboxDatabase>;
  const released = await db
    .updateTable('outbox')
    .set({ parked_at: null, park_reason: null })
    .where('published_at', 'is', null)
    .where(
      'sequence',
      'in',
      'sequence' in which
        ? [which.sequence]
        : db
            .selectFrom('outbox')
            .select('sequence')
            .where('parked_at', 'is not', null)
            .orderBy('sequence')
            .limit(which.limit),
    )
    .where('parked_at', 'is not', null)
    .returning(parkedColumns)
    .execute();
  released.sort((a, b) => a.sequence - b.sequence);
  return { released: released.map(asParkedEvent), stillParked: (await outboxCounts(db)).parked };
}

/**
 * `outbox-list` and `outbox-republish`, for a service with an outbox table (see
 * `createOutboxTable`).
 */
export function outboxCommands<DB extends OutboxDatabase>(): AdminCommands<DB> {
  return {
    'outbox-list': adminCommand({
      usage: '[--limit N]',
      summary: `parked outbox rows, oldest first (N ≤ ${OUTBOX_LIST_LIMIT.max}), and counts`,
      options: { limit: { type: 'string' } },
      check: (args) =>
        integerOption(
          args,
          'limit',
          { min: 1, max: OUTBOX_LIST_LIMIT.max },
          OUTBOX_LIST_LIMIT.default,
        ),
      run: ({ db, args: limit }) => listParkedEvents(db, limit),
    }),
    'outbox-republish': adminCommand({
      usage: '--sequence N | --all',
      summary: `hand parked rows back to the relay (--all: the oldest ${OUTBOX_RELEASE_MAX})`,
      options: { sequence: { type: 'string' }, all: { type: 'boolean' } },
      check(args) {
        const sequence = integerOption(args, 'sequence', { min: 1, max: Number.MAX_SAFE_INTEGER });
        if ((sequence === undefined) === (args.all !== true)) {
          throw new AdminUsageError('give --sequence N or --all');
        }
        return sequence === undefined ? { limit: OUTBOX_RELEASE_MAX } : { sequence };
      },
      async run({ db, args }) {
        const outcome = await releaseParkedEvents(db, args);
        if ('sequence' in args && outcome.released.length === 0) {
          throw new AdminError(`no parked outbox row has sequence ${args.sequence}`);
        }
        return {
          ...outcome,
          note: 'the relay publishes them within a second; one whose cause remains is parked again',
        };
      },
    }),
  };
}
