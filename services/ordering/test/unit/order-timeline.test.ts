import type { OrderStatus } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import type { OrderRow, OrderStatusChangeRow } from '../../src/db/ordering.table.js';
import { orderTimelineOf } from '../../src/lifecycle/order-timeline.js';
import type { OrderDeliveryAttempt } from '../../src/webhooks/delivery-attempts.repository.js';

const placedAt = new Date('2026-11-22T18:05:00.000Z');
const later = (seconds: number) => new Date(placedAt.getTime() + seconds * 1_000);

function order(overrides: Partial<OrderRow> = {}): OrderRow {
  const card = overrides.charge_id !== null;
  return {
    order_id: '0b9d7e4c-6a2f-4f1e-8c3d-2a1b0c9d8e7f',
    partner_id: 'a0000000-0000-4000-8000-000000000001',
    end_user_id: 'diner-1',
    store_id: '5f1e9c3a-7b2d-4e8f-9a6c-1d0b3e5f7a92',
    store_partner_id: 'a0000000-0000-4000-8000-000000000002',
    mode: 'live',
    fulfillment_mode: 'PICKUP',
    state: 'open',
    status: 'pending',
    version: 1,
    details: { paymentType: card ? 'CARD' : 'PAY_AT_STORE' } as OrderRow['details'],
    charge_id: 'c0000000-0000-4000-8000-000000000003',
    total_minor: 2_364,
    currency: 'USD',
    estimated_ready_at: null,
    cancel_reason: null,
    accept_by: null,
    cancelled_by: null,
    store_deleted_at: null,
    created_at: placedAt,
    updated_at: placedAt,
    ...overrides,
  };
}

function change(
  version: number,
  previous: OrderStatus | null,
  status: OrderStatus,
  at: Date,
  cancel?: { by: 'store' | 'platform'; reason: string; items?: string[] },
): OrderStatusChangeRow {
  return {
    order_id: order().order_id,
    version,
    state: status === 'cancelled' ? 'cancelled' : status === 'completed' ? 'completed' : 'open',
    status,
    previous_status: previous,
    estimated_ready_at: null,
    cancel_reason: cancel?.reason ?? null,
    cancelled_by: cancel?.by ?? null,
    unavailable_item_ids: cancel?.items ?? null,
    changed_at: at,
  };
}

const attempt = (version: number, at: Date, outcome: 'delivered' | 'failed') =>
  ({
    delivery_id: `d0000000-0000-4000-8000-00000000000${version}`,
    attempt: 1,
    outcome,
    response_status: outcome === 'delivered' ? 204 : 503,
    latency_ms: 42,
    error: outcome === 'delivered' ? null : 'the endpoint answered HTTP 503',
    tried_at: at,
    event_type: version === 1 ? 'order.created' : 'order.status_changed',
    version,
  }) satisfies OrderDeliveryAttempt;

/** Each event as a short line: its second after placement, kind and what it says. */
const lines = (events: ReturnType<typeof orderTimelineOf>) =>
  events.map((event) => {
    const second = (Date.parse(event.at) - placedAt.getTime()) / 1_000;
    const what =
      event.kind === 'payment' || event.kind === 'store'
        ? event.action
        : event.kind === 'status'
          ? `v${event.version} ${event.status}`
          : event.kind === 'webhook'
            ? `v${event.version} ${event.outcome}`
            : '';
    return `${second} ${event.kind} ${what}`.trim();
  });

describe('an order timeline', () => {
  it('reads a card order placed, accepted and moved, in time order, its tries among its steps', () => {
    const events = orderTimelineOf(
      order({ status: 'preparing', version: 3, updated_at: later(60) }),
      [
        change(1, null, 'pending', placedAt),
        change(2, 'pending', 'confirmed', later(30)),
        change(3, 'confirmed', 'preparing', later(60)),
      ],
      [
        attempt(1, later(1), 'failed'),
        attempt(1, later(6), 'delivered'),
        attempt(2, later(30.5), 'delivered'),
      ],
      [],
    );
    expect(lines(events)).toEqual([
      '0 placed',
      '0 payment authorized',
      '0 payment captured',
      '0 status v1 pending',
      '1 webhook v1 failed',
      '6 webhook v1 delivered',
      '30 store accepted',
      '30 status v2 confirmed',
      '30.5 webhook v2 delivered',
      '60 status v3 preparing',
    ]);
  });

  it('reads a store taking the order at its submission URL as accepted when placed', () => {
    const events = orderTimelineOf(
      order({ status: 'confirmed', charge_id: null }),
      [change(1, null, 'confirmed', placedAt)],
      [],
      [],
    );
    expect(lines(events)).toEqual(['0 placed', '0 store accepted', '0 status v1 confirmed']);
    expect(events[1]).toMatchObject({ reason: null, unavailableItemIds: [] });
  });

  it('reads a denial with its reason and the items that ran out, then its refund once made', () => {
    const fries = 'e4f5a6b7-c8d9-4e0f-9a1b-2c3d4e5f6a71';
    const cancelled = order({
      state: 'cancelled',
      status: 'cancelled',
      version: 2,
      cancel_reason: 'Out of soda',
      cancelled_by: 'store',
      updated_at: later(20),
    });
    const events = orderTimelineOf(
      cancelled,
      [
        change(1, null, 'pending', placedAt),
        change(2, 'pending', 'cancelled', later(20), {
          by: 'store',
          reason: 'Out of soda',
          items: [fries],
        }),
      ],
      [],
      [{ amount: null, state: 'settled', settled_at: later(21) }],
    );
    expect(lines(events).slice(4)).toEqual([
      '20 store denied',
      '20 status v2 cancelled',
      '21 payment refunded',
    ]);
    expect(
      events.find((event) => event.kind === 'payment' && event.action === 'refunded'),
    ).toMatchObject({
      amount: 23.64,
    });
    expect(events.find((event) => event.kind === 'store')).toMatchObject({
      reason: 'Out of soda',
      unavailableItemIds: [fries],
    });
    expect(events.findLast((event) => event.kind === 'status')).toMatchObject({
      cancelledBy: 'store',
      state: 'cancelled',
    });
  });

  it('shows no refund while it is owed, and the refund of a cancel from before refunds were owed', () => {
    const cancelled = order({
      state: 'cancelled',
      status: 'cancelled',
      version: 2,
      cancelled_by: 'store',
      updated_at: later(20),
    });
    const history = [
      change(1, null, 'pending', placedAt),
      change(2, 'pending', 'cancelled', later(20), { by: 'store', reason: 'Closed early' }),
    ];
    const owed = orderTimelineOf(
      cancelled,
      history,
      [],
      [{ amount: null, state: 'owed', settled_at: null }],
    );
    expect(lines(owed).filter((line) => line.includes('refunded'))).toEqual([]);
    // Cancels used to commit only after their refund: refunded at the cancel.
    const before = orderTimelineOf(cancelled, history, [], []);
    expect(lines(before)).toContain('20 payment refunded');
  });

  it('reads a cancel by the platform (not accepted in time) as no answer of the store', () => {
    const events = orderTimelineOf(
      order({ state: 'cancelled', status: 'cancelled', version: 2, charge_id: null }),
      [
        change(1, null, 'pending', placedAt),
        change(2, 'pending', 'cancelled', later(300), { by: 'platform', reason: 'Not accepted' }),
      ],
      [],
      [],
    );
    expect(lines(events)).toEqual(['0 placed', '0 status v1 pending', '300 status v2 cancelled']);
  });

  it('reads an order placed before timelines from the one version it kept', () => {
    const events = orderTimelineOf(
      order({ status: 'ready', version: 4, charge_id: null, updated_at: later(90) }),
      [change(4, null, 'ready', later(90))],
      [],
      [],
    );
    expect(lines(events)).toEqual(['0 placed', '90 status v4 ready']);
  });
});
