import {
  subjects,
  type Charge,
  type OrderContext,
  type OrderError,
  type PlaceOrderRequest,
  type ValidatedOrder,
} from '@pcp/contracts';
import { AppError, type BusClient, type Logger, type RequestContext } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { Counter, type Registry } from 'prom-client';
import type { OrderingMutant } from '../config.js';
import type { OrderEvaluation, OrderEvaluator } from '../validate/order-evaluator.js';
import type {
  OrderDetails,
  OrderingDatabase,
  OrderRow,
  PlaceSnapshot,
  PlaceStep,
} from '../db/ordering.table.js';
import { acceptByOf, estimatedReadyAtOf, storeTiming } from '../lifecycle/acceptance-window.js';
import { insertOrder, toOrder } from '../lifecycle/order.repository.js';
import { answerOf, isFinal } from './idempotency.js';
import {
  advanceAttempt,
  type HeldAttempt,
  LeaseLostError,
  recordAttemptOutcome,
  releaseLease,
  renewLease,
} from './place-attempt.repository.js';
import type { StoreSubmitter } from './store-submitter.js';

export interface PlaceSagaDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly bus: BusClient;
  readonly evaluate: OrderEvaluator;
  readonly submitter: StoreSubmitter;
  readonly clock: () => Date;
  readonly logger: Logger;
  readonly registry: Registry;
  /** The deployment's subject prefix (the outbox's event subjects carry it). */
  readonly prefix: string;
  /** Publish the outbox now (after a commit that wrote an event). */
  readonly nudge: () => void;
  readonly leaseMs: number;
  /** How long an answer is kept, and how long an unanswered key may take to get one. */
  readonly retentionMs: number;
  /** How long an abandoned attempt the store may hold waits before the sweeper finishes it. */
  readonly settleAfterMs: number;
  /** How long authorize, capture and release may take (the processor's own timeout and some). */
  readonly paymentsTimeoutMs: number;
  /** Test-only: SIGKILL this process right after this recovery point commits. */
  readonly failpoint?: PlaceStep;
  /** Test-only: every new order's acceptance window, in seconds, whatever its store's. */
  readonly testAcceptanceWindowSeconds?: number;
  /** Test-only: the fault suite's planted defect (`ORDERING_TEST_MUTANT`). */
  readonly mutant?: OrderingMutant;
}

/** What one run of the saga carries from step to step (never stored). */
interface Run {
  readonly ctx: RequestContext;
  /** The request's body: only a run that starts at `started` has it (and needs it). */
  readonly input?: PlaceOrderRequest;
  /** The store's order context, once a step of this run fetched it. */
  context?: OrderContext;
}

type ActiveStep = Exclude<PlaceStep, 'recorded'>;

/** One step of place: its work from its recovery point, and its compensation. */
interface SagaStep {
  /** Do the step's work and record the next point (or the final answer). */
  run(attempt: HeldAttempt, run: Run): Promise<HeldAttempt>;
  /** Past the key's deadline: release what the order may hold and record the final answer. */
  compensate(attempt: HeldAttempt, ctx: RequestContext): Promise<HeldAttempt>;
}

/**
 * Place (docs/guide/orders.md#placing-an-order) as a saga of named steps, one per recovery point. A
 * step does one thing outside the database, then records the next point with what it learnt in ONE
 * statement, compare-and-set on the run's lease and the step it read (so a run that lost its key
 * writes nothing and a step never goes backwards). The final answer, success or failure, is
 * recorded with the last step.
 *
 * | point      | the step does                        | it records                                | an unknown outcome is settled by                                       | past the key's deadline (compensation)          |
 * |------------|--------------------------------------|-------------------------------------------|------------------------------------------------------------------------|-------------------------------------------------|
 * | started    | validate and price the order         | validated + snapshot, or the refusal      | nothing has left the platform: validate again                         | nothing is held; answer IDEMPOTENCY_KEY_EXPIRED |
 * | validated  | authorize (payments keys the charge  | submitting or capturing + charge id, or   | asking payments again: the order's charge, learnt from the processor  | release (void) the order's charge; EXPIRED      |
 * |            | by the attempt's order id)           | the decline                               | when its answer was lost                                              |                                                 |
 * | submitting | POST the order to the store          | capturing (accepted; or the order itself  | resubmitting with the same webhook-id (2xx or 409: the store has it); | release; the store may hold it: counted, logged |
 * |            |                                      | when nothing is charged), or rejected     | the sweeper does it soon after the partner gives up                  |                                                 |
 * | capturing  | capture, then record the order and   | recorded: the order and its 201, in one   | capturing again (payments answers a captured charge as it is);        | release (refund); counted, logged               |
 * |            | its answer                           | transaction                               | the sweeper does it soon after the partner gives up                  |                                                 |
 * | rejected   | release the authorization            | recorded: STORE_REJECTED                  | releasing again                                                        | the same                                        |
 *
 * A store without a submission URL skips `submitting`; an order with nothing to charge skips
 * `capturing`. Past its deadline a key is settled (`settleExpired`), never resumed, by the
 * sweeper or by the retry that finds it first.
 */
export function createPlaceSaga(deps: PlaceSagaDeps) {
  const { db, bus } = deps;
  const expiredAt = new Counter({
    name: 'pcp_place_expired_total',
    help: 'Place keys answered IDEMPOTENCY_KEY_EXPIRED (unfinished past their deadline: payment released, no order), by the point they were left at; at submitting or capturing the store may hold an order the platform never placed',
    labelNames: ['step'] as const,
    registers: [deps.registry],
  });
  for (const step of ['started', 'validated', 'submitting', 'capturing'])
    expiredAt.inc({ step }, 0);

  const steps: Record<ActiveStep, SagaStep> = {
    started: {
      run: validate,
      // Nothing has left the platform.
      compensate: (attempt, ctx) => expire(attempt, ctx, { release: false, storeMayHold: false }),
    },
    validated: {
      run: authorizePayment,
      compensate: (attempt, ctx) => expire(attempt, ctx, { release: true, storeMayHold: false }),
    },
    submitting: {
      run: submitOrder,
      compensate: (attempt, ctx) => expire(attempt, ctx, { release: true, storeMayHold: true }),
    },
    capturing: {
      run: captureAndRecord,
      compensate: (attempt, ctx) => expire(attempt, ctx, { release: true, storeMayHold: true }),
    },
    rejected: {
      run: (attempt, run) => recordRejection(attempt, run.ctx),
      // A store's refusal, once known, stays the key's answer.
      compensate: recordRejection,
    },
  };

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
      return advance(attempt, 'capturing', {
        charge_id: chargeId,
        settleAfterMs: deps.settleAfterMs,
      });
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
    return recordOrder(attempt, snapshot, await capture(attempt, snapshot, run.ctx));
  }

  /** rejected: release the authorization and record the store's refusal as the answer. */
  function recordRejection(attempt: HeldAttempt, ctx: RequestContext): Promise<HeldAttempt> {
    const errors = attempt.store_rejection ?? [];
    const refusal = new AppError('STORE_REJECTED', 'The store did not accept the order', {
      errors,
    });
    return recordFailure(attempt, refusal, ctx, { release: true });
  }

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

  /** Take the attempt from its last recovery point to its final answer. */
  function run(
    attempt: HeldAttempt,
    input: PlaceOrderRequest | undefined,
    ctx: RequestContext,
  ): Promise<Uint8Array> {
    return holding(attempt, ctx, async (progress) => {
      const state: Run = { ctx, ...(input ? { input } : {}) };
      while (progress.attempt.step !== 'recorded') {
        progress.attempt = await steps[progress.attempt.step].run(progress.attempt, state);
      }
      return progress.attempt;
    });
  }

  /**
   * A key past its deadline gets its final answer instead of being resumed: whatever its
   * order holds is released, and it answers IDEMPOTENCY_KEY_EXPIRED (a store's refusal, once
   * known, stays its answer).
   */
  function settleExpired(attempt: HeldAttempt, ctx: RequestContext): Promise<Uint8Array> {
    return holding(attempt, ctx, async ({ attempt: current }) =>
      current.step === 'recorded' ? current : steps[current.step].compensate(current, ctx),
    );
  }

  /**
   * Run `work` as the holder of the attempt's lease (renewed meanwhile) to the key's
   * recorded answer. A final failure is recorded as the answer, its payment released once
   * the order may hold one (a failure while validating or authorizing holds nothing); a
   * retryable one frees the key for the next request at once.
   */
  async function holding(
    attempt: HeldAttempt,
    ctx: RequestContext,
    work: (progress: { attempt: HeldAttempt }) => Promise<HeldAttempt>,
  ): Promise<Uint8Array> {
    const key = attempt.idempotency_key;
    const holder = attempt.lease_owner ?? '';
    const renewal = setInterval(() => {
      renewLease(db, key, holder, deps.leaseMs).catch((error: unknown) =>
        deps.logger.warn({ err: error, requestId: ctx.requestId }, 'place lease renewal failed'),
      );
    }, deps.leaseMs / 3);
    const progress = { attempt };
    try {
      return answerOf(await work(progress), false);
    } catch (error) {
      let failure = error;
      if (error instanceof AppError && isFinal(error)) {
        const reached = progress.attempt;
        const release = reached.step !== 'started' && reached.step !== 'validated';
        try {
          return answerOf(await recordFailure(reached, error, ctx, { release }), false);
        } catch (recording) {
          failure = recording;
        }
      }
      await releaseLease(db, key, holder).catch((release: unknown) =>
        deps.logger.warn({ err: release, requestId: ctx.requestId }, 'place lease release failed'),
      );
      if (failure instanceof LeaseLostError) {
        throw new AppError(
          'IDEMPOTENCY_KEY_IN_PROGRESS',
          'Another request with this Idempotency-Key took the order over; retry it unchanged',
          { retryAfterSeconds: 1 },
        );
      }
      throw failure;
    } finally {
      clearInterval(renewal);
    }
  }

  async function advance(
    attempt: HeldAttempt,
    step: PlaceStep,
    changes: Parameters<typeof advanceAttempt>[3],
  ): Promise<HeldAttempt> {
    const row = await advanceAttempt(db, attempt, step, changes);
    failpoint(step);
    return row;
  }

  function failpoint(step: PlaceStep): void {
    if (deps.failpoint === step) process.kill(process.pid, 'SIGKILL');
  }

  /** The order's charge, authorized; null when there is nothing to charge. */
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
    const fits =
      charge.status === 'authorized' &&
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

  /**
   * The order, open, and the key's answer, in one transaction: pending with its acceptance
   * deadline (confirmed when the store's URL took it), with its first estimate.
   */
  async function recordOrder(
    attempt: HeldAttempt,
    snapshot: PlaceSnapshot,
    payment: OrderDetails['payment'],
  ): Promise<HeldAttempt> {
    const now = deps.clock();
    const details = { ...snapshot.details, payment };
    const storeAccepted = snapshot.storeAccepted === true;
    const row: OrderRow = {
      order_id: attempt.order_id,
      partner_id: attempt.partner_id,
      end_user_id: attempt.end_user_id,
      store_id: snapshot.storeId,
      store_partner_id: snapshot.storePartnerId,
      mode: attempt.mode,
      fulfillment_mode: details.fulfillment.mode,
      state: 'open',
      status: storeAccepted ? 'confirmed' : 'pending',
      version: 1,
      details,
      charge_id: attempt.charge_id,
      total_minor: snapshot.totalMinor,
      currency: snapshot.currency,
      estimated_ready_at: estimatedReadyAtOf(now, details.fulfillment, snapshot.timing),
      accept_by: acceptByOf(now, snapshot.timing, storeAccepted),
      cancel_reason: null,
      cancelled_by: null,
      created_at: now,
      updated_at: now,
    };
    // The order's text, serialized once: the recorded answer, replied as it is from now on.
    const body = JSON.stringify(toOrder(row));
    const recorded = await db.transaction().execute(async (trx) => {
      await insertOrder(trx, row, deps.prefix);
      return recordAttemptOutcome(trx, attempt, { status: 201, body }, deps.retentionMs);
    });
    failpoint('recorded');
    deps.nudge();
    return recorded;
  }

  /** A final failure becomes the key's answer, after releasing its payment where asked. */
  async function recordFailure(
    attempt: HeldAttempt,
    error: AppError,
    ctx: RequestContext,
    options: { release: boolean },
  ): Promise<HeldAttempt> {
    if (options.release && deps.mutant !== 'saga-no-release') await releasePayment(attempt, ctx);
    const problem = {
      errorCode: error.code,
      detail: error.message,
      ...(error.errors ? { errors: error.errors } : {}),
      ...(error.errorsOmitted > 0 ? { errorsOmitted: error.errorsOmitted } : {}),
      requestId: ctx.requestId,
      timestamp: deps.clock().toISOString(),
    };
    return recordAttemptOutcome(
      db,
      attempt,
      { status: error.info.status, body: JSON.stringify(problem) },
      deps.retentionMs,
    );
  }

  return { run, settleExpired };
}

export type PlaceSaga = ReturnType<typeof createPlaceSaga>;

/** Payments' refusals that are the partner's to know, as place answers them. */
const PAYMENT_OUTCOMES = new Set([
  'PAYMENT_DECLINED',
  'PAYMENT_FAILED',
  'PAYMENT_TOKEN_INVALID',
  'PAYMENT_TYPE_NOT_ALLOWED',
]);

function snapshotOf(attempt: HeldAttempt): PlaceSnapshot {
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
