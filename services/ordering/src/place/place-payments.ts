// Place's calls to payments: the order's charge authorized, captured or released, and which
// of their failures the partner gets to know.
import { subjects, type Charge } from '@pcp/contracts';
import { AppError, type RequestContext } from '@pcp/service-kit';
import type { OrderDetails, PlaceSnapshot } from '../db/ordering.table.js';
import type { HeldAttempt } from './place-attempt.repository.js';
import type { PlaceSagaDeps } from './place-saga.js';

/** Payments, as the steps of place call it for their attempt. */
export function placePayments(deps: PlaceSagaDeps) {
  const { bus } = deps;

  /** The order's charge, authorized (or captured); null when there is nothing to charge. */
  async function authorize(
    attempt: HeldAttempt,
    snapshot: PlaceSnapshot,
    ctx: RequestContext,
  ): Promise<Charge | null> {
    if (snapshot.paymentId === null || snapshot.totalMinor === 0) return null;
    // Payments keys the charge by the attempt's order id: however often this runs for the
    // attempt, the processor sees one authorization, and no other order can get it.
    const charge = await payments(() =>
      bus.request(
        subjects.payments.authorize,
        {
          orderId: attempt.order_id,
          paymentId: snapshot.paymentId!,
          amount: snapshot.totalMinor,
          currency: snapshot.currency,
          // Stored with the charge: its capture and release go to this mode's processor too.
          mode: attempt.mode,
        },
        ctx,
        { timeoutMs: deps.paymentsTimeoutMs },
      ),
    );
    // Captured in full: a run that captured it lost its relaxed `capturing` point in a
    // database crash; the capture step answers it as it is.
    const held =
      charge.status === 'authorized' ||
      (charge.status === 'captured' && charge.capturedAmount === snapshot.totalMinor);
    const fits =
      held &&
      charge.orderId === attempt.order_id &&
      charge.paymentId === snapshot.paymentId &&
      charge.amount === snapshot.totalMinor &&
      charge.currency === snapshot.currency;
    if (!fits) throw unexpectedCharge(attempt, charge, 'authorized');
    return charge;
  }

  async function capture(
    attempt: HeldAttempt,
    snapshot: PlaceSnapshot,
    ctx: RequestContext,
  ): Promise<OrderDetails['payment']> {
    const charge = await payments(() =>
      bus.request(subjects.payments.capture, { chargeId: attempt.charge_id! }, ctx, {
        timeoutMs: deps.paymentsTimeoutMs,
      }),
    );
    // A charge from before charges were keyed by order has no order id.
    const fits =
      charge.status === 'captured' &&
      (charge.orderId === attempt.order_id || charge.orderId === null) &&
      charge.capturedAmount === snapshot.totalMinor;
    if (!fits) throw unexpectedCharge(attempt, charge, 'captured');
    return { paymentId: charge.paymentId, brand: charge.brand, last4: charge.last4 };
  }

  /** Release whatever the attempt's order holds (idempotent; nothing when it holds nothing). */
  async function releasePayment(attempt: HeldAttempt, ctx: RequestContext): Promise<void> {
    await payments(() =>
      bus.request(subjects.payments.release, { orderId: attempt.order_id }, ctx, {
        timeoutMs: deps.paymentsTimeoutMs,
      }),
    );
  }

  /**
   * A charge that is not the one this attempt needs (another order's, another amount, not
   * in the state the step leaves it in): never used, never recorded as a final answer; the
   * key stays to be resumed or settled, and the reconciler reports the charge.
   */
  function unexpectedCharge(attempt: HeldAttempt, charge: Charge, wanted: string): AppError {
    deps.logger.error(
      { orderId: attempt.order_id, chargeId: charge.chargeId, status: charge.status, wanted },
      'payments answered with a charge this place attempt cannot use',
    );
    return new AppError('INTERNAL', 'The payment could not be completed; retry with the same key');
  }

  /**
   * A payments call whose failure reaches the partner only as a payment outcome (a decline,
   * a card that is not the end user's, the processor unavailable) or a 5xx; anything else
   * (a conflict, a charge in the wrong state) is this platform's fault, answered 500 and
   * never recorded against the key.
   */
  async function payments<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (
        error instanceof AppError &&
        error.info.status < 500 &&
        !PAYMENT_OUTCOMES.has(error.code)
      ) {
        deps.logger.error({ err: error }, 'payments refused a call of place');
        throw new AppError(
          'INTERNAL',
          'The payment could not be completed; retry with the same key',
          {
            cause: error,
          },
        );
      }
      throw error;
    }
  }

  return { authorize, capture, releasePayment };
}

export type PlacePayments = ReturnType<typeof placePayments>;

/** Payments' refusals that are the partner's to know, as place answers them. */
const PAYMENT_OUTCOMES = new Set([
  'PAYMENT_DECLINED',
  'PAYMENT_FAILED',
  'PAYMENT_TOKEN_INVALID',
  'PAYMENT_TYPE_NOT_ALLOWED',
]);
