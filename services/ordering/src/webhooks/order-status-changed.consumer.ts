import { events, type WebhookPayload } from '@pcp/contracts';
import { storedOrigin, type ConsumerWork, type HandlerOutcome } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { randomUUID } from 'node:crypto';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { recordDelivery } from './delivery.repository.js';
import type { WebhookStreamLog } from './webhook-recording.js';

/**
 * The durable consumer's handler: each order event becomes one delivery row (unique per
 * order and version, one statement), acked once written; the dispatchers do the rest. An
 * event its partner does not subscribe to (or whose endpoint is disabled) is recorded as
 * `skipped`, so the versions of every order stay contiguous for the in-order rule. A partner
 * with a webhook stream gets the event in its stream log too, in the same statement.
 */
export function webhookRecorder(
  db: Kysely<OrderingDatabase>,
  due: () => void,
  stream: WebhookStreamLog,
) {
  return async function record(msg: JsMsg, _work: ConsumerWork): Promise<HandlerOutcome> {
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
    const payload: WebhookPayload = {
      type: data.event,
      timestamp: event.occurredAt,
      data: {
        orderId: data.orderId,
        storeId: data.storeId,
        state: data.state,
        status: data.status,
        previousStatus: data.previousStatus,
        version: event.version,
        estimatedReadyAt: data.estimatedReadyAt ?? null,
        cancelReason: data.cancelReason ?? null,
        cancelledBy: data.cancelledBy ?? null,
      },
    };
    const recorded = await recordDelivery(
      db,
      {
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
      },
      stream.keep,
    );
    if (recorded.state === 'due') due();
    if (recorded.streamed) stream.appended(data.partnerId);
  };
}
