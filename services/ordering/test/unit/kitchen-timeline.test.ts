import { describe, expect, it } from 'vitest';
import { applyOrderStatusChange } from '../../src/lifecycle/order-status.js';
import {
  kitchenReadyInMs,
  kitchenTimeline,
  nextKitchenStep,
} from '../../src/fixtures/kitchen-timeline.js';

/** The kitchen's steps from pending to the end, each applied by the status machine. */
function walk(fulfillmentMode: 'PICKUP' | 'DELIVERY_BY_MERCHANT') {
  let position = {
    state: 'open' as const as 'open' | 'completed' | 'cancelled',
    status: 'pending' as Parameters<typeof applyOrderStatusChange>[0]['status'],
    fulfillmentMode,
    estimatedReadyAt: null,
  };
  const statuses: string[] = [];
  let totalMs = 0;
  for (let step = nextKitchenStep(position); step; step = nextKitchenStep(position)) {
    const moved = applyOrderStatusChange(position, step.change);
    if (moved.kind !== 'moved') throw new Error(`the kitchen's step was ${moved.kind}`);
    position = { ...position, state: moved.state, status: moved.status };
    statuses.push(moved.state === 'open' ? moved.status : moved.state);
    totalMs += step.afterMs;
  }
  return { statuses, totalMs };
}

describe('the fixture kitchen’s timeline', () => {
  it('takes a pickup order to completed in legal steps, in about a minute', () => {
    expect(walk('PICKUP')).toEqual({
      statuses: ['confirmed', 'preparing', 'ready', 'completed'],
      totalMs: 60_000,
    });
  });

  it('takes a delivery order through inTransit, in about a minute', () => {
    expect(walk('DELIVERY_BY_MERCHANT')).toEqual({
      statuses: ['confirmed', 'preparing', 'ready', 'inTransit', 'completed'],
      totalMs: 60_000,
    });
  });

  it('confirms within seconds and estimates ready when the kitchen will have it, scaled', () => {
    expect(kitchenTimeline[0]).toMatchObject({ from: 'pending', afterMs: 2_000 });
    expect(kitchenReadyInMs(1)).toBe(33_000);
    expect(kitchenReadyInMs(0.1)).toBe(3_300);
  });

  it('leaves ended orders alone', () => {
    for (const state of ['completed', 'cancelled'] as const) {
      expect(
        nextKitchenStep({ state, status: 'ready', fulfillmentMode: 'PICKUP' }),
      ).toBeUndefined();
    }
  });
});
