// Place's named steps, one per recovery point: each does its one thing outside the database,
// then records the next point or the key's final answer.
import {
  subjects,
  type OrderContext,
  type OrderError,
  type PlaceOrderRequest,
  type ValidatedOrder,
} from '@pcp/contracts';
import { AppError, type RequestContext } from '@pcp/service-kit';
import type { OrderDetails, PlaceSnapshot } from '../db/ordering.table.js';
import { storeTiming } from '../lifecycle/acceptance-window.js';
import type { OrderEvaluation } from '../validate/order-evaluator.js';
import type { HeldAttempt } from './place-attempt.repository.js';
import type { PlacePayments } from './place-payments.js';
import type { PlaceRecords } from './place-records.js';
import type { PlaceSagaDeps } from './place-saga.js';

/** What one run of the saga carries from step to step (never stored). */
export interface Run {
  readonly ctx: RequestContext;
  /** The request's body: only a run that starts at `started` has it (and needs it). */
  readonly input?: PlaceOrderRequest;
  /** The store's order context, once a step of this run fetched it. */
  context?: OrderContext;
}

/** The steps of place, each named by the recovery point it starts from. */
export function placeSteps(
  deps: PlaceSagaDeps,
  { authorize, capture }: PlacePayments,
  { advance, failpoint, recordOrder, recordFailure }: PlaceRecords,
) {
  const { bus } = deps;

  /** started: validate and price the order; record the snapshot, or the refusal. */
  async function validate(attempt: HeldAttempt, run: Run): Promise<HeldAttempt> {
    if (!run.input) throw new Error('an attempt that was never validated has nothing to resume');
    const evaluation = await deps.evaluate(run.input, run.ctx);
    run.context = evaluation.context;
    const refusal = refusalOf(evaluation);
    if (refusal) return recordFailure(attempt, refusal, run.ctx, { release: false });
    const snapshot: PlaceSnapshot = {
      storeId: run.input.cart.storeId,
      storePartnerId: evaluation.context.ownerPartnerId,
      details: detailsOf(evaluation.order),
      totalMinor: evaluation.totalMinor,
      currency: evaluation.currency,
      paymentId: run.input.paymentType === 'CARD' ? (run.input.paymentId ?? null) : null,
      submits: evaluation.context.submission !== null,
      timing: {
        ...storeTiming(evaluation.context.store, evaluation.order.fulfillment.mode),
        ...(deps.testAcceptanceWindowSeconds === undefined
          ? {}
          : { acceptanceWindowSeconds: deps.testAcceptanceWindowSeconds }),
      },
    };
    return advance(attempt, 'validated', { snapshot });
  }

  /** validated: authorize the order's charge; on to the store, to capture, or the order. */
  async function authorizePayment(attempt: HeldAttempt, run: Run): Promise<HeldAttempt> {
    const snapshot = snapshotOf(attempt);
    const charge = await authorize(attempt, snapshot, run.ctx);
    const chargeId = charge?.chargeId ?? null;
    // A snapshot from before `submits` was recorded asks the store on the next step.
    if (snapshot.submits !== false) {
      return advance(attempt, 'submitting', {
        charge_id: chargeId,
        settleAfterMs: deps.settleAfterMs,
      });
    }
    if (chargeId) {
      // Relaxed: lost in a database crash, the key is back at validated, and authorizing
      // again answers the order's charge as it is (captured meanwhile, or not); only the
      // sweeper's early finish is lost, and the key's expiry still releases the charge.
      return advance(
        attempt,
        'capturing',
        { charge_id: chargeId, settleAfterMs: deps.settleAfterMs },
        'relaxed',
      );
    }
    return recordOrder(attempt, snapshot, null);
  }

  /** submitting: POST the order to the store; its refusal, or on to capture (or the order). */
  async function submitOrder(attempt: HeldAttempt, run: Run): Promise<HeldAttempt> {
    const snapshot = snapshotOf(attempt);
    run.context ??= await bus.request(
      subjects.stores.orderContext,
      { storeId: snapshot.storeId },
      run.ctx,
    );
    const rejection = await submitToStore(run.context, attempt, snapshot, run.ctx);
    if (rejection) {
      return advance(attempt, 'rejected', { store_rejection: rejection });
    }
    const accepted = { ...snapshot, storeAccepted: run.context.submission !== null };
    if (!attempt.charge_id) return recordOrder(attempt, accepted, null);
    return advance(attempt, 'capturing', { snapshot: accepted });
  }

  /** capturing: capture the charge, then record the order and its answer. */
  async function captureAndRecord(attempt: HeldAttempt, run: Run): Promise<HeldAttempt> {
    const snapshot = snapshotOf(attempt);
    if (deps.mutant === 'capture-skipped') {
      return recordOrder(attempt, snapshot, {
        paymentId: snapshot.paymentId!,
        brand: 'unknown',
        last4: '0000',
      });
    }
    const payment = await capture(attempt, snapshot, run.ctx);
    failpoint('captured');
    return recordOrder(attempt, snapshot, payment);
  }

  /** rejected: release the authorization and record the store's refusal as the answer. */
  function recordRejection(attempt: HeldAttempt, ctx: RequestContext): Promise<HeldAttempt> {
    const errors = attempt.store_rejection ?? [];
    const refusal = new AppError('STORE_REJECTED', 'The store did not accept the order', {
      errors,
    });
    return recordFailure(attempt, refusal, ctx, { release: true });
  }

  /** The store's refusal, or undefined once it took the order (or has no URL to send to). */
  async function submitToStore(
    context: OrderContext,
    attempt: HeldAttempt,
    snapshot: PlaceSnapshot,
    ctx: RequestContext,
  ): Promise<OrderError[] | undefined> {
    if (!context.submission) return undefined;
    const { details } = snapshot;
    // Asked at each try, never kept: a rotation signs with the new secret from then on.
    const { secrets } = await bus.request(
      subjects.stores.submissionSecrets,
      { storeId: snapshot.storeId },
      ctx,
    );
    const target = { url: context.submission.url, secrets };
    const submission = await deps.submitter.submit(target, {
      orderId: attempt.order_id,
      body: {
        orderId: attempt.order_id,
        storeId: snapshot.storeId,
        amounts: details.amounts,
        cart: details.cart,
        fulfillment: details.fulfillment,
        customer: details.customer,
        paymentType: details.paymentType,
        specialInstructions: details.specialInstructions,
        placedAt: attempt.created_at.toISOString(),
      },
    });
    if (submission.outcome === 'accepted') return undefined;
    if (submission.outcome === 'rejected') return submission.errors;
    deps.logger.warn(
      { requestId: ctx.requestId, storeId: snapshot.storeId, reason: submission.reason },
      'store order submission failed; its outcome is unknown',
    );
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      'The store could not be reached; retry with the same Idempotency-Key',
      { retryAfterSeconds: 5 },
    );
  }

  return { validate, authorizePayment, submitOrder, captureAndRecord, recordRejection };
}

export function snapshotOf(attempt: HeldAttempt): PlaceSnapshot {
  if (!attempt.snapshot) throw new Error('an attempt past validation has its snapshot');
  return attempt.snapshot;
}

/** Why a validated order cannot be placed, as place answers it. */
function refusalOf({ order, errorsOmitted }: OrderEvaluation): AppError | undefined {
  if (order.isValid) return undefined;
  const notAllowed = order.errors.find((error) => error.code === 'PAYMENT_TYPE_NOT_ALLOWED');
  if (notAllowed) {
    return new AppError('PAYMENT_TYPE_NOT_ALLOWED', notAllowed.message, { errors: [notAllowed] });
  }
  return new AppError('ORDER_INVALID', 'The order cannot be placed as it is; see errors', {
    errors: order.errors,
    errorsOmitted,
  });
}

/** The parts of a valid order that place keeps (the payment is known at capture). */
function detailsOf(order: ValidatedOrder): OrderDetails {
  if (!order.amounts || !order.cart) throw new Error('a valid order has amounts and a cart');
  return {
    amounts: order.amounts,
    cart: order.cart,
    fulfillment: order.fulfillment,
    client: order.client,
    customer: order.customer,
    paymentType: order.paymentType,
    payment: null,
    specialInstructions: order.specialInstructions,
  };
}
