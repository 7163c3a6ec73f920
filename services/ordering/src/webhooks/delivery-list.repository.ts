// A partner's webhook deliveries: listed, and sent again on request.
import type { WebhookDeliveriesQuery } from '@pcp/contracts';
import { createdAtKey, olderThan, pageOf, type ListKey } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';

import type { OrderingDatabase, WebhookDeliveryRow } from '../db/ordering.table.js';

type Db = Kysely<OrderingDatabase>;

/** The partner's deliveries, newest first; `skipped` ones are not the partner's business. */
export async function listDeliveries(
  db: Db,
  partnerId: string,
  query: WebhookDeliveriesQuery,
  after: ListKey | undefined,
): Promise<{ rows: WebhookDeliveryRow[]; next: ListKey | null }> {
  let select = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .select(createdAtKey.as('created_at_key'))
    .where('partner_id', '=', partnerId)
    .where(
      'status',
      'in',
      query.status ? [query.status] : ['pending', 'failed', 'delivered', 'dead'],
    );
  if (after) select = select.where(olderThan(after, 'delivery_id'));
  const rows = await select
    .orderBy('created_at', 'desc')
    .orderBy('delivery_id', 'desc')
    .limit(query.limit + 1)
    .execute();
  return pageOf(rows, query.limit, (row) => row.delivery_id);
}

/** Deliver again at once with the same webhook-id, whatever became of it before. */
export function resendDelivery(
  db: Db,
  partnerId: string,
  deliveryId: string,
): Promise<WebhookDeliveryRow | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set({
      status: 'pending',
      attempts: 0,
      next_attempt_at: sql<Date>`now()`,
      lease_owner: null,
      lease_expires_at: null,
      last_error: null,
      updated_at: sql<Date>`now()`,
    })
    .where('delivery_id', '=', deliveryId)
    .where('partner_id', '=', partnerId)
    .where('status', '!=', 'skipped')
    .returningAll()
    .executeTakeFirst();
}
