// Place's compensation: a key past its deadline, unfinished, has what its order may hold
// released and answers IDEMPOTENCY_KEY_EXPIRED.
import { AppError, type RequestContext } from '@pcp/service-kit';
import { Counter } from 'prom-client';
import type { HeldAttempt } from './place-attempt.repository.js';
import type { PlacePayments } from './place-payments.js';
import type { PlaceRecords } from './place-records.js';
import type { PlaceSagaDeps } from './place-saga.js';
import { snapshotOf } from './place-steps.js';

/** The compensation of the steps that may leave something held. */
export function placeCompensation(
  deps: PlaceSagaDeps,
  { releasePayment }: Pick<PlacePayments, 'releasePayment'>,
  { recordFailure }: Pick<PlaceRecords, 'recordFailure'>,
) {
  const expiredAt = new Counter({
    name: 'pcp_place_expired_total',
    help: 'Place keys answered IDEMPOTENCY_KEY_EXPIRED (unfinished past their deadline: payment released, no order), by the point they were left at; at submitting or capturing the store may hold an order the platform never placed',
    labelNames: ['step'] as const,
    registers: [deps.registry],
  });
  for (const step of ['started', 'validated', 'submitting', 'capturing'])
    expiredAt.inc({ step }, 0);

  /** A key past its deadline: its payment released where the order may hold one, answered EXPIRED. */
  async function expire(
    attempt: HeldAttempt,
    ctx: RequestContext,
    holds: { release: boolean; storeMayHold: boolean },
  ): Promise<HeldAttempt> {
    if (holds.release) await releasePayment(attempt, ctx);
    expiredAt.inc({ step: attempt.step });
    if (holds.storeMayHold) {
      deps.logger.warn(
        { orderId: attempt.order_id, storeId: snapshotOf(attempt).storeId, step: attempt.step },
        'a place key expired unfinished after its order was sent to the store; its payment was released',
      );
    }
    const expired = new AppError(
      'IDEMPOTENCY_KEY_EXPIRED',
      'This Idempotency-Key was never answered within its 24 hours: its payment was released and no order was placed; place the order again with a new key',
    );
    return recordFailure(attempt, expired, ctx, { release: false });
  }

  return { expire };
}
