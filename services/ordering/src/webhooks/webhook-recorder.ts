import { events, type OrderEventKind, type WebhookPayload } from '@pcp/contracts';
import type { ConsumerWork, HandlerOutcome } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { JsMsg } from 'nats';
import { randomUUID } from 'node:crypto';
import type { OrderingDatabase } from '../db/ordering.table.js';
import { findEndpoint, recordDelivery } from '../db/webhook.repository.js';

/**
 * The durable consumer's handler: each order event becomes one delivery row (unique per
 * order and version), acked once written; the dispatchers do the rest. An event its
 * partner does not subscribe to (or whose endpoint is disabled) is recorded as `skipped`,
 * so the versions of every order stay contiguous for the in-order rule.
 */
export function webhookRecorder(db: Kysely<OrderingDatabase>, recorded: () => void) {
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
    const endpoint = await findEndpoint(db, data.partnerId);
    const subscribed =
      endpoint !== undefined &&
      endpoint.disabled_at === null &&
      endpoint.events.includes(data.event);
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
      },
    };
    const inserted = await recordDelivery(db, {
      delivery_id: randomUUID(),
      event_id: event.id,
      partner_id: data.partnerId,
      order_id: data.orderId,
      version: event.version,
      event_type: data.event satisfies OrderEventKind,
      payload: JSON.stringify(payload),
      status: subscribed ? 'pending' : 'skipped',
      next_attempt_at: subscribed ? sql<Date>`now()` : null,
      occurred_at: new Date(event.occurredAt),
    });
    if (inserted && subscribed) recorded();
  };
}
