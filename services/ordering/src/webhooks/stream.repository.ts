import type { WebhookEventKind } from '@pcp/contracts';
import { sql, type Kysely } from 'kysely';
import type { OrderingDatabase } from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/**
 * The tenant's stream secret (sealed): the one stored, or `sealed` stored now when it had
 * none. From then on its webhook events are appended to its stream log.
 */
export async function openStream(db: Db, partnerId: string, sealed: string): Promise<string> {
  await db
    .insertInto('webhook_streams')
    .values({ partner_id: partnerId, secret: sealed })
    .onConflict((oc) => oc.column('partner_id').doNothing())
    .execute();
  const row = await db
    .selectFrom('webhook_streams')
    .select('secret')
    .where('partner_id', '=', partnerId)
    .executeTakeFirstOrThrow();
  return row.secret;
}

/**
 * Up to `limit` events of the tenant's log after `after` (from its oldest when absent), but
 * those of the kinds in `leaveOut`.
 */
export function readStream(
  db: Db,
  partnerId: string,
  after: number | undefined,
  limit: number,
  leaveOut: readonly WebhookEventKind[] = [],
) {
  return db
    .selectFrom('webhook_stream_events')
    .select(['seq', 'webhook_id', 'event_type', 'body', 'created_at'])
    .where('partner_id', '=', partnerId)
    .where('seq', '>', String(after ?? 0))
    .$if(leaveOut.length > 0, (query) => query.where('event_type', 'not in', [...leaveOut]))
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** Events older than the retention leave every stream log. */
export async function pruneStreamEvents(db: Db, retentionMs: number): Promise<void> {
  await db
    .deleteFrom('webhook_stream_events')
    .where('created_at', '<', sql<Date>`now() - ${retentionMs} * interval '1 millisecond'`)
    .execute();
}
