import { events, type StoreChangedData, type StoreEventData } from '@pcp/contracts';
import { insertOutboxEvent, type EventEnvelope } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { StoresDatabase } from '../db/store.table.js';

/** The outbox aggregate of store events: one version sequence per store, for every kind. */
export const STORE_EVENT_AGGREGATE = 'store';

/**
 * Record a store event in the caller's transaction (docs/conventions.md#messaging): bumps the
 * store's `event_version`, which locks its row, so of two events of one store the one
 * committed first has the lower version and the lower outbox sequence. The event carries the
 * store's mode (only endpoints of that mode receive it). Undefined when the store does not exist.
 */
export async function recordStoreEvent(
  trx: Kysely<StoresDatabase>,
  prefix: string,
  storeId: string,
  data: StoreEventData,
): Promise<EventEnvelope<string, StoreChangedData> | undefined> {
  const row = await trx
    .updateTable('stores')
    .set({ event_version: sql<number>`event_version + 1` })
    .where('store_id', '=', storeId)
    .returning(['event_version', 'mode'])
    .executeTakeFirst();
  if (!row) return undefined;
  return insertOutboxEvent(trx, {
    subject: `${prefix}.${events.storeChanged.subject}`,
    type: events.storeChanged.schema.shape.type.value,
    aggregate: { type: STORE_EVENT_AGGREGATE, id: storeId, version: row.event_version },
    data: { ...data, mode: row.mode },
  });
}
