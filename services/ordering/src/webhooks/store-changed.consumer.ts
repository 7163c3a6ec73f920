import { events, storeEventPayload } from '@pcp/contracts';
import { storedOrigin, type ConsumerWork, type HandlerOutcome } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { recordStoreEvent } from './delivery-record.repository.js';
import type { WebhookStreamLog } from './webhook-recording.js';

/**
 * The store-event recorder's handler (docs/guide/webhooks.md#store-events): each store event
 * becomes one delivery row per partner of its store's mode subscribed to its kind, in one
 * transaction, acked once written; the dispatchers do the rest. Its own durable consumer, so a fan-out never holds
 * up the recording of order events. The partners given a row that have a webhook stream get
 * the event in their stream log too, in the same transaction.
 */
export function storeEventRecorder(
  db: Kysely<OrderingDatabase>,
  due: () => void,
  stream: WebhookStreamLog,
) {
  return async function record(msg: JsMsg, work: ConsumerWork): Promise<HandlerOutcome> {
    let body: unknown;
    try {
      body = msg.json();
    } catch {
      return { deadLetter: 'not JSON' };
    }
    const parsed = events.storeChanged.schema.safeParse(body);
    if (!parsed.success) return { deadLetter: 'not a store-changed event' };
    const envelope = parsed.data;
    // The mode picks the endpoints; partners are told nothing of it (an endpoint has one).
    const { mode } = envelope.data;
    const payload = storeEventPayload(envelope);
    const recorded = await recordStoreEvent(
      db,
      {
        eventId: envelope.id,
        storeId: envelope.data.storeId,
        version: envelope.version,
        eventType: payload.type,
        mode,
        payload: JSON.stringify(payload),
        occurredAt: new Date(envelope.occurredAt),
        origin: storedOrigin(),
      },
      stream.keep,
      () => work.working(),
    );
    // Two events claiming one version of a store: the first stays, in order; this one is
    // kept for an operator instead of being sent out of order or lost.
    if (recorded === 'version-taken') return { deadLetter: 'another event has this store version' };
    if (recorded && recorded.due > 0) due();
    for (const partnerId of recorded?.streamed ?? []) stream.appended(partnerId);
  };
}
