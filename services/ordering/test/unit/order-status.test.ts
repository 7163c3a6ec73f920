import type { OrderState, OrderStatus, OrderStatusChange } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import {
  applyOrderStatusChange,
  type FulfillmentMode,
  type OrderPosition,
} from '../../src/lifecycle/order-status.js';

const at = (state: OrderState, status: OrderStatus, mode: FulfillmentMode): OrderPosition => ({
  state,
  status,
  fulfillmentMode: mode,
  estimatedReadyAt: null,
});
const open = (status: OrderStatus, mode: FulfillmentMode) => at('open', status, mode);

const step = (status: NonNullable<OrderStatusChange['status']>): OrderStatusChange => ({ status });
const complete: OrderStatusChange = { state: 'completed' };
const cancel: OrderStatusChange = { state: 'cancelled', cancelReason: 'Out of buns' };

const openStatuses = ['pending', 'confirmed', 'preparing', 'ready', 'inTransit'] as const;
const steps = ['confirmed', 'preparing', 'ready', 'inTransit'] as const;
const modes = ['PICKUP', 'DELIVERY_BY_MERCHANT'] as const;

/** Every legal step: [mode, from, to]. */
const legalSteps: [FulfillmentMode, OrderStatus, OrderStatus][] = [
  ...modes.flatMap((mode): [FulfillmentMode, OrderStatus, OrderStatus][] => [
    [mode, 'pending', 'confirmed'],
    [mode, 'confirmed', 'preparing'],
    [mode, 'preparing', 'ready'],
  ]),
  ['DELIVERY_BY_MERCHANT', 'ready', 'inTransit'],
];
const isLegalStep = (mode: FulfillmentMode, from: OrderStatus, to: OrderStatus) =>
  legalSteps.some(([m, f, t]) => m === mode && f === from && t === to);

describe('steps', () => {
  it.each(legalSteps)('%s: %s → %s is a status change', (mode, from, to) => {
    expect(applyOrderStatusChange(open(from, mode), step(to as (typeof steps)[number]))).toEqual({
      kind: 'moved',
      state: 'open',
      status: to,
      event: 'order.status_changed',
      previousStatus: from,
    });
  });

  // Every other (mode, open status, step) that is not a repeat: skips, going back, a
  // pickup order in transit, anything after inTransit.
  const illegalSteps = modes.flatMap((mode) =>
    openStatuses.flatMap((from) =>
      steps
        .filter((to) => to !== from && !isLegalStep(mode, from, to))
        .map((to): [FulfillmentMode, OrderStatus, (typeof steps)[number]] => [mode, from, to]),
    ),
  );
  it.each(illegalSteps)(
    '%s: %s → %s is illegal, naming the status and the move',
    (mode, from, to) => {
      const outcome = applyOrderStatusChange(open(from, mode), step(to));
      expect(outcome.kind).toBe('illegal');
      if (outcome.kind !== 'illegal') return;
      expect(outcome.detail).toContain(`The order is ${from}`);
      expect(outcome.detail).toContain(`move to ${to}`);
    },
  );

  it('counts its illegal steps: nothing is left untested', () => {
    // 2 modes × 5 open statuses × 4 steps, less the repeats (4 per mode), less the legal.
    expect(illegalSteps).toHaveLength(2 * 5 * 4 - 2 * 4 - legalSteps.length);
  });

  it('says a pickup order is never in transit', () => {
    const outcome = applyOrderStatusChange(open('ready', 'PICKUP'), step('inTransit'));
    expect(outcome).toEqual({
      kind: 'illegal',
      detail:
        'The order is ready; it cannot move to inTransit (a pickup order is never in transit)',
    });
  });

  it('names the next status when a step is skipped', () => {
    expect(applyOrderStatusChange(open('pending', 'PICKUP'), step('ready'))).toEqual({
      kind: 'illegal',
      detail: 'The order is pending; it cannot move to ready (its next status is confirmed)',
    });
  });
});

describe('repeating the current status', () => {
  it.each(modes.flatMap((mode) => steps.map((status) => [mode, status] as const)))(
    '%s: %s again is a no-op',
    (mode, status) => {
      expect(applyOrderStatusChange(open(status, mode), step(status))).toEqual({
        kind: 'unchanged',
      });
    },
  );

  it('with the same estimatedReadyAt (another spelling of the instant) is a no-op', () => {
    const position = {
      ...open('preparing', 'PICKUP'),
      estimatedReadyAt: '2026-11-27T12:30:00.000Z',
    };
    expect(
      applyOrderStatusChange(position, {
        status: 'preparing',
        estimatedReadyAt: '2026-11-27T12:30:00Z',
      }),
    ).toEqual({ kind: 'unchanged' });
  });

  it('with another estimatedReadyAt is a change of its own', () => {
    const position = {
      ...open('preparing', 'PICKUP'),
      estimatedReadyAt: '2026-11-27T12:30:00.000Z',
    };
    expect(
      applyOrderStatusChange(position, {
        status: 'preparing',
        estimatedReadyAt: '2026-11-27T12:45:00Z',
      }),
    ).toEqual({
      kind: 'moved',
      state: 'open',
      status: 'preparing',
      event: 'order.status_changed',
      previousStatus: 'preparing',
      estimatedReadyAt: '2026-11-27T12:45:00Z',
    });
  });

  it('with a first estimatedReadyAt is a change', () => {
    expect(
      applyOrderStatusChange(open('confirmed', 'DELIVERY_BY_MERCHANT'), {
        status: 'confirmed',
        estimatedReadyAt: '2026-11-27T12:45:00Z',
      }),
    ).toMatchObject({
      kind: 'moved',
      status: 'confirmed',
      estimatedReadyAt: '2026-11-27T12:45:00Z',
    });
  });
});

describe('a step with estimatedReadyAt', () => {
  it('carries the new estimate', () => {
    expect(
      applyOrderStatusChange(open('pending', 'PICKUP'), {
        status: 'confirmed',
        estimatedReadyAt: '2026-11-27T12:30:00Z',
      }),
    ).toEqual({
      kind: 'moved',
      state: 'open',
      status: 'confirmed',
      event: 'order.status_changed',
      previousStatus: 'pending',
      estimatedReadyAt: '2026-11-27T12:30:00Z',
    });
  });

  it('leaves out an estimate equal to the current one', () => {
    const position = { ...open('pending', 'PICKUP'), estimatedReadyAt: '2026-11-27T12:30:00.000Z' };
    const outcome = applyOrderStatusChange(position, {
      status: 'confirmed',
      estimatedReadyAt: '2026-11-27T12:30:00Z',
    });
    expect(outcome).toMatchObject({ kind: 'moved', status: 'confirmed' });
    expect(outcome).not.toHaveProperty('estimatedReadyAt');
  });
});

describe('finishing', () => {
  it.each([
    ['PICKUP', 'ready'],
    ['DELIVERY_BY_MERCHANT', 'inTransit'],
  ] as const)('%s: completed from %s', (mode, from) => {
    expect(applyOrderStatusChange(open(from, mode), complete)).toEqual({
      kind: 'moved',
      state: 'completed',
      status: 'completed',
      event: 'order.status_changed',
      previousStatus: from,
    });
  });

  it.each([
    ['PICKUP', 'pending'],
    ['PICKUP', 'confirmed'],
    ['PICKUP', 'preparing'],
    ['DELIVERY_BY_MERCHANT', 'pending'],
    ['DELIVERY_BY_MERCHANT', 'confirmed'],
    ['DELIVERY_BY_MERCHANT', 'preparing'],
    ['DELIVERY_BY_MERCHANT', 'ready'],
  ] as const)('%s: not from %s', (mode, from) => {
    const outcome = applyOrderStatusChange(open(from, mode), complete);
    expect(outcome.kind).toBe('illegal');
    if (outcome.kind === 'illegal') {
      expect(outcome.detail).toMatch(new RegExp(`^The order is ${from}; it cannot be completed`));
    }
  });

  it('explains where a delivery order is completed from', () => {
    expect(applyOrderStatusChange(open('ready', 'DELIVERY_BY_MERCHANT'), complete)).toEqual({
      kind: 'illegal',
      detail:
        'The order is ready; it cannot be completed (a delivery order is completed from inTransit)',
    });
  });
});

describe('cancelling', () => {
  const cancellable = modes.flatMap((mode) =>
    (['pending', 'confirmed', 'preparing', 'ready'] as const).map((from) => [mode, from] as const),
  );
  it.each(cancellable)('%s: from %s, with its reason', (mode, from) => {
    expect(applyOrderStatusChange(open(from, mode), cancel)).toEqual({
      kind: 'moved',
      state: 'cancelled',
      status: 'cancelled',
      event: 'order.cancelled',
      previousStatus: from,
      cancelReason: 'Out of buns',
    });
  });

  it('not once in transit', () => {
    expect(applyOrderStatusChange(open('inTransit', 'DELIVERY_BY_MERCHANT'), cancel)).toEqual({
      kind: 'illegal',
      detail:
        'The order is inTransit; it cannot be cancelled (an order in transit is not cancelled)',
    });
  });

  it('not without a reason (the contract refuses it first; the machine too)', () => {
    expect(applyOrderStatusChange(open('pending', 'PICKUP'), { state: 'cancelled' }).kind).toBe(
      'illegal',
    );
  });
});

describe('an order that ended', () => {
  const ended = modes.flatMap((mode) =>
    (['completed', 'cancelled'] as const).flatMap((state) =>
      [...steps.map(step), complete, cancel].map((change) => [mode, state, change] as const),
    ),
  );
  it.each(ended)('%s, %s: %o is illegal', (mode, state, change) => {
    const outcome = applyOrderStatusChange(at(state, state, mode), change);
    expect(outcome.kind).toBe('illegal');
    if (outcome.kind === 'illegal')
      expect(outcome.detail).toMatch(new RegExp(`^The order is ${state};`));
  });
});

describe('walking the whole flow', () => {
  it.each([
    ['PICKUP', ['confirmed', 'preparing', 'ready']],
    ['DELIVERY_BY_MERCHANT', ['confirmed', 'preparing', 'ready', 'inTransit']],
  ] as const)('%s from pending to completed', (mode, path) => {
    let position = open('pending', mode);
    for (const status of path) {
      const outcome = applyOrderStatusChange(position, step(status));
      expect(outcome.kind).toBe('moved');
      if (outcome.kind !== 'moved') return;
      position = { ...position, state: outcome.state, status: outcome.status };
    }
    const done = applyOrderStatusChange(position, complete);
    expect(done).toMatchObject({ kind: 'moved', state: 'completed', status: 'completed' });
  });

  it('starts at confirmed too (a store that accepted the order when it was placed)', () => {
    expect(applyOrderStatusChange(open('confirmed', 'PICKUP'), step('preparing'))).toMatchObject({
      kind: 'moved',
      status: 'preparing',
      previousStatus: 'confirmed',
    });
  });
});

describe('a change that names no move', () => {
  it('is illegal (the contract refuses it before the machine sees it)', () => {
    expect(applyOrderStatusChange(open('pending', 'PICKUP'), {}).kind).toBe('illegal');
  });
});

describe('a cancel sent again', () => {
  it('finds the order its store cancelled as it left it (no new version), whatever the reason', () => {
    for (const mode of modes) {
      const cancelledByStore = {
        ...at('cancelled', 'cancelled', mode),
        cancelledBy: 'store' as const,
      };
      expect(applyOrderStatusChange(cancelledByStore, cancel)).toEqual({ kind: 'unchanged' });
      expect(
        applyOrderStatusChange(cancelledByStore, { state: 'cancelled', cancelReason: 'Other' }),
      ).toEqual({ kind: 'unchanged' });
      // Any other change of it is still refused.
      expect(applyOrderStatusChange(cancelledByStore, step('confirmed')).kind).toBe('illegal');
      expect(applyOrderStatusChange(cancelledByStore, complete).kind).toBe('illegal');
    }
  });

  it('is refused on an order the platform cancelled: the store never cancelled it', () => {
    const byPlatform = {
      ...at('cancelled', 'cancelled', 'PICKUP'),
      cancelledBy: 'platform' as const,
    };
    expect(applyOrderStatusChange(byPlatform, cancel)).toMatchObject({
      kind: 'illegal',
      detail: expect.stringMatching(/^The order is cancelled;/),
    });
  });
});
