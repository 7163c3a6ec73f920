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

/** The outbox aggregate of profile changes: its own version sequence per store. */
export const STORE_PROFILE_AGGREGATE = 'store-profile';

/**
 * Record, in the caller's transaction, that the store's order profile changed in a way no
 * store event announces, so ordering's profile caches drop it (an internal event partners never
 * receive). Bumps the store's `profile_version`, locking its row.
 */
export async function recordProfileChange(
  trx: Kysely<StoresDatabase>,
  prefix: string,
  storeId: string,
): Promise<void> {
  const row = await trx
    .updateTable('stores')
    .set({ profile_version: sql<number>`profile_version + 1` })
    .where('store_id', '=', storeId)
    .returning(['profile_version', 'mode'])
    .executeTakeFirst();
  if (!row) return;
  await insertOutboxEvent(trx, {
    subject: `${prefix}.${events.storeProfileChanged.subject}`,
    type: events.storeProfileChanged.schema.shape.type.value,
    aggregate: { type: STORE_PROFILE_AGGREGATE, id: storeId, version: row.profile_version },
    data: { storeId, mode: row.mode },
  });
}
