import type { MarketfrontStore, Order } from '@pcp/contracts';
import { DEFAULT_ACCEPTANCE_WINDOW_SECONDS } from '@pcp/contracts';

/** The cancel reason of an order the platform cancelled (docs/guide/orders.md#acceptance-window). */
export const NOT_ACCEPTED_REASON = 'not accepted in time';

/** Orders in a row not accepted in time that pause their store. */
export const TIMEOUTS_BEFORE_PAUSE = 3;

/** What place keeps of the store to date a new order (docs/guide/orders.md#estimated-ready-time). */
export interface StoreTiming {
  readonly acceptanceWindowSeconds: number;
  /** Minutes from placement to ready for an ASAP order: the fulfillment's ETA and busy minutes. */
  readonly prepMinutes: number;
}

/** The store's timing for an order of this fulfillment mode, as its order context shows it. */
export function storeTiming(
  store: Pick<
    MarketfrontStore,
    'acceptanceWindowSeconds' | 'pickup' | 'delivery' | 'status' | 'extraPrepMinutes'
  >,
  mode: Order['fulfillment']['mode'],
): StoreTiming {
  const settings = mode === 'PICKUP' ? store.pickup : store.delivery;
  // A busy store's extra minutes count only while it is busy.
  const busyMinutes = store.status === 'busy' ? (store.extraPrepMinutes ?? 0) : 0;
  return {
    acceptanceWindowSeconds: store.acceptanceWindowSeconds,
    prepMinutes: (settings?.etaMinutes ?? 0) + busyMinutes,
  };
}

/**
 * The deadline of a pending order placed at `placedAt`; none when the store's URL took it (it
 * starts confirmed). A snapshot from before the window existed gets the default window.
 */
export function acceptByOf(
  placedAt: Date,
  timing: Partial<StoreTiming> | undefined,
  storeAccepted: boolean,
): Date | null {
  if (storeAccepted) return null;
  const seconds = timing?.acceptanceWindowSeconds ?? DEFAULT_ACCEPTANCE_WINDOW_SECONDS;
  return new Date(placedAt.getTime() + seconds * 1_000);
}

/**
 * The estimate an order gets when placed: ASAP, placed + the fulfillment's ETA (+ busy
 * minutes); SCHEDULED, the scheduled time. Null for an ASAP snapshot from before estimates.
 */
export function estimatedReadyAtOf(
  placedAt: Date,
  fulfillment: Pick<Order['fulfillment'], 'scheduleType' | 'scheduledTime'>,
  timing: Partial<StoreTiming> | undefined,
): Date | null {
  if (fulfillment.scheduleType === 'SCHEDULED' && fulfillment.scheduledTime) {
    return new Date(fulfillment.scheduledTime);
  }
  if (timing?.prepMinutes === undefined) return null;
  return new Date(placedAt.getTime() + timing.prepMinutes * 60_000);
}

/** Whether a pending order's window has ended at `now` (the deadline itself included). */
export function acceptanceEnded(
  order: { status: Order['status']; acceptBy: Date | null },
  now: Date,
): boolean {
  return order.status === 'pending' && order.acceptBy !== null && order.acceptBy <= now;
}
