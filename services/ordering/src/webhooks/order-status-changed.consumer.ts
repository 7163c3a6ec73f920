import { events, orderEventPayload } from '@pcp/contracts';
import { storedOrigin, type ConsumerWork, type HandlerOutcome } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { randomUUID } from 'node:crypto';
import type { OrderingDatabase } from '../db/ordering.table.js';
import {
  recordDeliveries,
  RECORD_BATCH,
  type OrderEventDelivery,
} from './delivery-record.repository.js';
import { groupCommit } from './group-commit.js';
import type { WebhookStreamLog } from './webhook-recording.js';

/**
 * The durable consumer's handler: each order event becomes one delivery row (unique per
 * order and version), acked once written; the dispatchers do the rest. An event its partner
 * does not subscribe to (or whose endpoint is disabled) is recorded as `skipped`, so the
 * versions of every order stay contiguous for the in-order rule. A partner with a webhook
 * stream gets the event in its stream log too, in the same statement.
 *
 * The events in hand at once are recorded together, one statement and commit for all of them
 * (group commit: one batch is written while the next gathers); each handler returns, and its
 * message is acked, only once its batch committed (at least once).
 */
export function webhookRecorder(
  db: Kysely<OrderingDatabase>,
  due: () => void,
  stream: WebhookStreamLog,
) {
  const record = groupCommit(
    async (events: OrderEventDelivery[]) => {
      // A redelivery of an event in the batch shares that one's recording (one row per order
      // and version in a statement).
      const batch: OrderEventDelivery[] = [];
      const slotOf = new Map<string, number>();
      const slots = events.map((event) => {
        const key = `${event.orderId}:${event.version}`;
        let slot = slotOf.get(key);
        if (slot === undefined) {
          slot = batch.push(event) - 1;
          slotOf.set(key, slot);
        }
        return slot;
      });
      const recorded = await recordDeliveries(db, batch, stream.keep);
      if (recorded.some((one) => one.state === 'due')) due();
      batch.forEach((event, index) => {
        if (recorded[index]!.streamed) stream.appended(event.partnerId);
      });
      return slots.map((slot) => recorded[slot]!);
    },
    // The events one fetch hands over are all in hand by the next turn.
    { maxBatch: RECORD_BATCH, gatherMs: 0 },
  );
  return async function handle(msg: JsMsg, _work: ConsumerWork): Promise<HandlerOutcome> {
    let body: unknown;
    try {
      body = msg.json();
    } catch {
      return { deadLetter: 'not JSON' };
    }
    const parsed = events.orderStatusChanged.schema.safeParse(body);
    if (!parsed.success) return { deadLetter: 'not an order-status-changed event' };
    const event = parsed.data;
    const { data } = event;
    const payload = orderEventPayload(event);
    await record({
      deliveryId: randomUUID(),
      eventId: event.id,
      partnerId: data.partnerId,
      orderId: data.orderId,
      storeId: data.storeId,
      version: event.version,
      eventType: data.event,
      payload: JSON.stringify(payload),
      occurredAt: new Date(event.occurredAt),
      origin: storedOrigin(),
    });
  };
}
