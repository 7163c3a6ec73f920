// The synthetic ordering.v1.order-status-changed events the webhooks bench publishes straight
// to JetStream, open loop: each event's occurredAt is its scheduled publish time.
import { randomUUID } from 'node:crypto';
import { orderEventKind, orderStatus } from '@pcp/contracts';
import type { JetStreamClient } from 'nats';
import { latencySummary, type LatencySummary } from '../../load/paced-load.js';
import { nowMs } from './receivers.worker.js';

/** Every status an order can have, cycled through by each order's versions. */
const STATUSES = orderStatus.options;
const EVENT_TYPE = 'ordering.v1.order-status-changed';
export const ORDER_EVENTS = orderEventKind.options;

export interface Order {
  orderId: string;
  storeId: string;
  /** The partner's index (the last is the failing one). */
  partner: number;
}

export interface BenchEvent extends Order {
  id: string;
  partnerId: string;
  version: number;
  kind: 'order.created' | 'order.status_changed';
  status: string;
  previousStatus: string | null;
  /** Set as it is published. */
  scheduledAt: number;
  occurredAt: string;
}

export const newOrders = (count: number, partnerOf: (index: number) => number): Order[] =>
  Array.from({ length: count }, (_, index) => ({
    orderId: randomUUID(),
    storeId: randomUUID(),
    partner: partnerOf(index),
  }));

/**
 * Every event of a phase in publish order: version k of every order in the k-th round, the
 * failing partner's orders spread evenly among the healthy ones.
 */
export function plan(
  partnerIds: string[],
  versions: number,
  healthy: Order[],
  failing: Order[] = [],
): BenchEvent[] {
  const eventOf = (order: Order, version: number): BenchEvent => ({
    id: randomUUID(),
    ...order,
    partnerId: partnerIds[order.partner]!,
    version,
    kind: version === 1 ? 'order.created' : 'order.status_changed',
    status: STATUSES[(version - 1) % STATUSES.length]!,
    previousStatus: version === 1 ? null : STATUSES[(version - 2) % STATUSES.length]!,
    scheduledAt: NaN,
    occurredAt: '',
  });
  const events: BenchEvent[] = [];
  for (let version = 1; version <= versions; version++) {
    let next = 0;
    healthy.forEach((order, index) => {
      events.push(eventOf(order, version));
      const due = Math.floor(((index + 1) * failing.length) / healthy.length);
      for (; next < due; next++) events.push(eventOf(failing[next]!, version));
    });
  }
  return events;
}

const encode = (event: BenchEvent) =>
  Buffer.from(
    JSON.stringify({
      id: event.id,
      type: EVENT_TYPE,
      occurredAt: event.occurredAt,
      version: event.version,
      data: {
        event: event.kind,
        orderId: event.orderId,
        storeId: event.storeId,
        partnerId: event.partnerId,
        state: 'open',
        status: event.status,
        previousStatus: event.previousStatus,
      },
    }),
  );

/**
 * Publish the events evenly spaced at `perSecond`, whether or not earlier ones were acked;
 * each is added to `published` as it leaves. The rate achieved and how late the sends were.
 */
export async function publishPaced(
  js: JetStreamClient,
  subject: string,
  events: BenchEvent[],
  perSecond: number,
  published: Map<string, BenchEvent>,
): Promise<{ rate: number; lateness: LatencySummary }> {
  const intervalMs = 1000 / perSecond;
  const lateness = new Float64Array(events.length);
  const acks: Promise<unknown>[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  const started = nowMs();
  const startedEpochMs = Date.now();
  await new Promise<void>((resolve) => {
    let sent = 0;
    const tick = () => {
      const due = Math.min(events.length, Math.floor((nowMs() - started) / intervalMs) + 1);
      for (; sent < due; sent++) {
        const event = events[sent]!;
        event.scheduledAt = started + sent * intervalMs;
        event.occurredAt = new Date(startedEpochMs + Math.round(sent * intervalMs)).toISOString();
        published.set(event.id, event);
        lateness[sent] = nowMs() - event.scheduledAt;
        acks.push(
          js.publish(subject, encode(event), { msgID: event.id }).catch((error: unknown) => {
            failures++;
            firstFailure ??= String(error);
          }),
        );
      }
      if (sent < events.length) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const seconds = (nowMs() - started) / 1000;
  await Promise.all(acks);
  if (failures > 0) {
    throw new Error(`${failures} of ${events.length} publishes failed; the first: ${firstFailure}`);
  }
  return { rate: Math.round(events.length / seconds), lateness: latencySummary(lateness) };
}
