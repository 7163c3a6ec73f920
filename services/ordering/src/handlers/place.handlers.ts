import {
  parseContract,
  placeOrderRequest,
  subjects,
  type Charge,
  type OrderContext,
  type OrderError,
  type PlaceOrderRequest,
  type PlaceOutcome,
  type ValidatedOrder,
} from '@pcp/contracts';
import {
  AppError,
  handle,
  requestInvalid,
  requireEndUser,
  requirePartner,
  type BusClient,
  type HandlerBinding,
  type Logger,
  type RequestContext,
} from '@pcp/service-kit';
import canonicalize from 'canonicalize';
import type { Kysely } from 'kysely';
import { createHash, randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import { insertOrder, toOrder, type OrderDetails } from '../db/order.repository.js';
import type { OrderingDatabase, PlaceAttemptRow, PlaceStep } from '../db/ordering.table.js';
import {
  advanceAttempt,
  claimAttempt,
  deleteAttempt,
  expiredAttempts,
  findRecordedAttempt,
  LeaseLostError,
  recordAttemptOutcome,
  releaseLease,
  renewLease,
  type Claim,
  type RecordedAttempt,
} from '../db/place-attempt.repository.js';
import type { StoreSubmitter } from '../store-submission/store-submitter.js';
import type { OrderEvaluator } from './order.handlers.js';

export interface PlaceHandlerDeps {
  readonly db: Kysely<OrderingDatabase>;
  readonly bus: BusClient;
  readonly evaluate: OrderEvaluator;
  readonly submitter: StoreSubmitter;
  readonly clock: () => Date;
  readonly logger: Logger;
  /** Where the idempotency outcomes are counted. */
  readonly registry: Registry;
  /** The deployment's subject prefix (the outbox's event subjects carry it). */
  readonly prefix: string;
  /** Publish the outbox now (after a commit that wrote an event). */
  readonly nudge: () => void;
  /** Names this process in the leases it holds. */
  readonly holder: string;
  readonly leaseMs: number;
  readonly retentionMs: number;
  /** How long authorize and capture may take (the processor's own timeout and some). */
  readonly paymentsTimeoutMs: number;
  /** Test-only: SIGKILL this process right after this recovery point commits. */
  readonly failpoint?: PlaceStep;
}

/** What the steps after validation need, recorded with the `validated` point. */
export interface PlaceSnapshot {
  readonly storeId: string;
  readonly storePartnerId: string;
  readonly details: OrderDetails;
  readonly totalMinor: number;
  readonly currency: string;
  readonly paymentId: string | null;
  /** Set at `submitted`: the store's URL took the order, so it starts confirmed. */
  readonly storeAccepted?: boolean;
}

/** SHA-256 of the RFC 8785 canonical JSON of the body (contract §8). */
export function fingerprintOf(body: unknown): string {
  let canonical: string | undefined;
  try {
    canonical = canonicalize(body);
  } catch (error) {
    throw notCanonicalizable(error);
  }
  return createHash('sha256')
    .update(canonical ?? '')
    .digest('hex');
}

/**
 * Why a parsed JSON body has no RFC 8785 form, as the partner's invalid request: each was
 * found by the fuzzer as a 500. A parsed body has no cycles or toJSON, so what remains is
 * what the partner sent.
 */
function notCanonicalizable(error: unknown): AppError {
  // canonicalize recurses: a body nested ~2,000 levels deep overflows the stack.
  if (error instanceof RangeError) {
    return new AppError('REQUEST_INVALID', 'The body is nested deeper than any order can be');
  }
  const message = error instanceof Error ? error.message : '';
  // JSON.parse reads 1e309 as Infinity, which I-JSON (RFC 7493) and RFC 8785 refuse.
  if (/Infinity|NaN/.test(message)) {
    return new AppError(
      'REQUEST_INVALID',
      'A number in the body is beyond the range of a double (such as 1e309)',
    );
  }
  if (/surrogate/i.test(message)) {
    return new AppError(
      'REQUEST_INVALID',
      'A string in the body holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)',
    );
  }
  return new AppError('REQUEST_INVALID', 'The body is not I-JSON (RFC 7493)');
}

/**
 * A failure that is the key's final answer (contract §8): a 4xx the same request would get
 * again. Retryable ones (PAYMENT_FAILED, processor or store unavailable, timeouts, 5xx)
 * leave the key to resume.
 */
function isFinal(error: AppError): boolean {
  const { status, retryable } = error.info;
  return status >= 400 && status < 500 && !retryable && status !== 409 && status !== 429;
}

/** Why a validated order cannot be placed, as place answers it (contract §7). */
function refusalOf(order: ValidatedOrder): AppError | undefined {
  if (order.isValid) return undefined;
  const notAllowed = order.errors.find((error) => error.code === 'PAYMENT_TYPE_NOT_ALLOWED');
  if (notAllowed) {
    return new AppError('PAYMENT_TYPE_NOT_ALLOWED', notAllowed.message, { errors: [notAllowed] });
  }
  return new AppError('ORDER_INVALID', 'The order cannot be placed as it is; see errors', {
    errors: order.errors,
  });
}

function replayOf(attempt: RecordedAttempt): PlaceOutcome {
  const status = attempt.response_status ?? 500;
  const body = attempt.response_body ?? '';
  return status < 300
    ? { replayed: true, status, orderId: attempt.order_id, order: body }
    : { replayed: true, status, problem: JSON.parse(body) as PlaceOutcome['problem'] };
}

/** What a key's claim decided, as the idempotency metric counts it. */
function idempotencyOutcome(claim: Claim): string {
  switch (claim.kind) {
    case 'claimed':
      return claim.resumed ? 'resumed' : 'new';
    case 'replay':
      return 'replayed';
    case 'conflict':
      return 'conflict';
    case 'busy':
      return 'in_progress';
  }
}

/**
 * Place (contract §7, §8): idempotency check → re-validate → authorize → submit to the store
 * → capture (void if the store rejects) → the order, open. Each recovery point is written
 * as its step completes, so a retried key resumes after the last one; a final outcome is
 * recorded with the last step and replayed for the key's retention.
 */
export function createPlacing(deps: PlaceHandlerDeps): {
  handlers: HandlerBinding[];
  /** Settle keys past their retention; the number settled (tests; a timer runs it). */
  sweepExpired(): Promise<number>;
} {
  const { db, bus, holder } = deps;
  const idempotency = new Counter({
    name: 'pcp_place_idempotency_total',
    help: 'Place requests by what their Idempotency-Key decided: new, resumed (an unfinished earlier run taken up: a retry after a retryable failure, or a holder that died), replayed, conflict, in_progress',
    labelNames: ['outcome'] as const,
    registers: [deps.registry],
  });

  async function place(body: unknown, ctx: RequestContext): Promise<PlaceOutcome> {
    const partnerId = requirePartner(ctx, 'distribution');
    const endUserId = requireEndUser(ctx);
    const key = ctx.idempotencyKey;
    if (!key) {
      throw new AppError(
        'MISSING_IDEMPOTENCY_KEY',
        'Send an Idempotency-Key header: a fresh UUID for each order attempt',
      );
    }
    const fingerprint = fingerprintOf(body);
    // The common retry first: a final answer for this very request, replayed as it is (its
    // body was valid when it was recorded, and the fingerprint says this one is the same).
    const recorded = await findRecordedAttempt(db, key);
    if (
      recorded?.partner_id === partnerId &&
      recorded.end_user_id === endUserId &&
      recorded.fingerprint === fingerprint
    ) {
      idempotency.inc({ outcome: 'replayed' });
      return replayOf(recorded);
    }
    const parsed = parseContract(placeOrderRequest, body);
    if (!parsed.success) throw requestInvalid(parsed.error.issues, parsed);

    const claim = await claimAttempt(db, {
      key,
      partnerId,
      endUserId,
      fingerprint,
      orderId: randomUUID(),
      holder,
      leaseMs: deps.leaseMs,
      retentionMs: deps.retentionMs,
    });
    idempotency.inc({ outcome: idempotencyOutcome(claim) });
    switch (claim.kind) {
      case 'conflict':
        throw new AppError(
          'IDEMPOTENCY_KEY_CONFLICT',
          'This Idempotency-Key was used with another body, partner or end user; use a new key',
        );
      case 'busy':
        throw new AppError(
          'IDEMPOTENCY_KEY_IN_PROGRESS',
          'An earlier request with this Idempotency-Key is still running; retry it unchanged',
          { retryAfterSeconds: claim.retryAfterSeconds },
        );
      case 'replay':
        return replayOf(claim.attempt);
      case 'claimed':
        return run(claim.attempt, parsed.data, ctx);
    }
  }

  /** Take the attempt from its last recovery point to a final outcome. */
  async function run(
    claimed: PlaceAttemptRow,
    input: PlaceOrderRequest | undefined,
    ctx: RequestContext,
  ): Promise<PlaceOutcome> {
    const key = claimed.idempotency_key;
    const renewal = setInterval(() => {
      renewLease(db, key, holder, deps.leaseMs).catch((error: unknown) =>
        deps.logger.warn({ err: error, requestId: ctx.requestId }, 'place lease renewal failed'),
      );
    }, deps.leaseMs / 3);
    let attempt = claimed;
    const advance = async (step: PlaceStep, changes: Parameters<typeof advanceAttempt>[4]) => {
      attempt = await advanceAttempt(db, key, holder, step, changes);
      failpoint(step);
    };
    let context: OrderContext | undefined;
    try {
      if (attempt.step === 'started') {
        if (!input) throw new Error('an attempt that was never validated has nothing to resume');
        const evaluation = await deps.evaluate(input, ctx);
        context = evaluation.context;
        const refusal = refusalOf(evaluation.order);
        if (refusal) return await recordFailure(attempt, refusal, ctx);
        const snapshot: PlaceSnapshot = {
          storeId: input.cart.storeId,
          storePartnerId: evaluation.context.ownerPartnerId,
          details: detailsOf(evaluation.order),
          totalMinor: evaluation.totalMinor,
          currency: evaluation.currency,
          paymentId: input.paymentType === 'CARD' ? (input.paymentId ?? null) : null,
        };
        await advance('validated', { snapshot: JSON.stringify(snapshot) });
      }
      let snapshot = attempt.snapshot as PlaceSnapshot;
      if (attempt.step === 'validated') {
        const charge = await authorize(snapshot, key, ctx);
        await advance('authorized', { charge_id: charge?.chargeId ?? null });
      }
      if (attempt.step === 'authorized') {
        context ??= await bus.request(
          subjects.stores.orderContext,
          { storeId: snapshot.storeId },
          ctx,
        );
        const rejection = await submitToStore(context, attempt, snapshot, ctx);
        if (rejection) {
          await advance('rejected', { store_rejection: JSON.stringify(rejection) });
        } else if (context.submission) {
          snapshot = { ...snapshot, storeAccepted: true };
          await advance('submitted', { snapshot: JSON.stringify(snapshot) });
        }
        // A store without a submission URL had nothing sent, so there is no point to record:
        // a retry from `authorized` finds it the same and goes on to capture.
      }
      if (attempt.step === 'rejected') {
        return await recordFailure(
          attempt,
          new AppError('STORE_REJECTED', 'The store did not accept the order', {
            errors: attempt.store_rejection as OrderError[],
          }),
          ctx,
        );
      }
      if (attempt.step === 'submitted' || attempt.step === 'authorized') {
        const payment = attempt.charge_id ? await capture(attempt.charge_id, ctx) : null;
        snapshot = { ...snapshot, details: { ...snapshot.details, payment } };
        await advance('captured', { snapshot: JSON.stringify(snapshot) });
      }
      return await recordOrder(attempt, snapshot);
    } catch (error) {
      let failure = error;
      if (error instanceof AppError && isFinal(error)) {
        try {
          return await recordFailure(attempt, error, ctx);
        } catch (recording) {
          failure = recording;
        }
      }
      // Retryable: the key is free again at once, and the next request resumes here.
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

  function failpoint(step: PlaceStep): void {
    if (deps.failpoint === step) process.kill(process.pid, 'SIGKILL');
  }

  async function authorize(
    snapshot: PlaceSnapshot,
    key: string,
    ctx: RequestContext,
  ): Promise<Charge | null> {
    if (snapshot.paymentId === null || snapshot.totalMinor === 0) return null;
    // The key is the partner's, and payments scopes its charges by (partner, end user, key):
    // however often this runs for the key, the processor sees one authorization.
    return bus.request(
      subjects.payments.authorize,
      {
        paymentId: snapshot.paymentId,
        amount: snapshot.totalMinor,
        currency: snapshot.currency,
        idempotencyKey: key,
      },
      ctx,
      { timeoutMs: deps.paymentsTimeoutMs },
    );
  }

  async function capture(chargeId: string, ctx: RequestContext): Promise<OrderDetails['payment']> {
    const charge = await bus.request(subjects.payments.capture, { chargeId }, ctx, {
      timeoutMs: deps.paymentsTimeoutMs,
    });
    return { paymentId: charge.paymentId, brand: charge.brand, last4: charge.last4 };
  }

  /** The store's refusal, or undefined once it took the order (or has no URL to send to). */
  async function submitToStore(
    context: OrderContext,
    attempt: PlaceAttemptRow,
    snapshot: PlaceSnapshot,
    ctx: RequestContext,
  ): Promise<OrderError[] | undefined> {
    if (!context.submission) return undefined;
    const { details } = snapshot;
    const submission = await deps.submitter.submit(context.submission, {
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
      'store order submission failed',
    );
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      'The store could not be reached; retry with the same Idempotency-Key',
      { retryAfterSeconds: 5 },
    );
  }

  /** The order, open, and the key's answer, in one transaction. */
  async function recordOrder(
    attempt: PlaceAttemptRow,
    snapshot: PlaceSnapshot,
  ): Promise<PlaceOutcome> {
    const now = deps.clock();
    const body = await db.transaction().execute(async (trx) => {
      const row = await insertOrder(
        trx,
        {
          order_id: attempt.order_id,
          partner_id: attempt.partner_id,
          end_user_id: attempt.end_user_id,
          store_id: snapshot.storeId,
          store_partner_id: snapshot.storePartnerId,
          fulfillment_mode: snapshot.details.fulfillment.mode,
          state: 'open',
          status: snapshot.storeAccepted ? 'confirmed' : 'pending',
          version: 1,
          details: JSON.stringify(snapshot.details),
          charge_id: attempt.charge_id,
          total_minor: snapshot.totalMinor,
          currency: snapshot.currency,
          estimated_ready_at: null,
          cancel_reason: null,
          created_at: now,
          updated_at: now,
        },
        deps.prefix,
      );
      const text = JSON.stringify(toOrder(row));
      await recordAttemptOutcome(trx, attempt.idempotency_key, holder, { status: 201, body: text });
      return text;
    });
    failpoint('recorded');
    deps.nudge();
    return { replayed: false, status: 201, orderId: attempt.order_id, order: body };
  }

  /**
   * A final failure becomes the key's answer. An authorization no order will use is voided
   * first: if that cannot be done now, the failure is not recorded and a retry voids it.
   */
  async function recordFailure(
    attempt: PlaceAttemptRow,
    error: AppError,
    ctx: RequestContext,
  ): Promise<PlaceOutcome> {
    if (attempt.charge_id && attempt.step !== 'captured') {
      await bus.request(subjects.payments.void, { chargeId: attempt.charge_id }, ctx, {
        timeoutMs: deps.paymentsTimeoutMs,
      });
    }
    const problem = {
      errorCode: error.code,
      detail: error.message,
      ...(error.errors ? { errors: error.errors } : {}),
      requestId: ctx.requestId,
      timestamp: deps.clock().toISOString(),
    };
    await recordAttemptOutcome(db, attempt.idempotency_key, holder, {
      status: error.info.status,
      body: JSON.stringify(problem),
    });
    return { replayed: false, status: error.info.status, problem };
  }

  /**
   * A key past its retention that never got an answer was abandoned by its caller. Once the
   * store has the order (submitted, captured) it is finished, since the store may already be
   * preparing it; before that, its authorization is voided. Then the key is forgotten.
   */
  async function sweepExpired(): Promise<number> {
    const expired = await expiredAttempts(db, SWEEP_BATCH);
    for (const attempt of expired) {
      // The placing partner's context: payments keeps charges per partner and end user.
      const ctx: RequestContext = {
        requestId: `place-cleanup-${attempt.order_id}`,
        partnerId: attempt.partner_id,
        partnerKind: 'distribution',
        endUserId: attempt.end_user_id,
      };
      try {
        if (attempt.response_status === null && attempt.step !== 'started') {
          const claim = await claimAttempt(db, {
            key: attempt.idempotency_key,
            partnerId: attempt.partner_id,
            endUserId: attempt.end_user_id,
            fingerprint: attempt.fingerprint,
            orderId: attempt.order_id,
            holder,
            leaseMs: deps.leaseMs,
            retentionMs: deps.retentionMs,
          });
          if (claim.kind !== 'claimed') continue;
          if (attempt.step === 'submitted' || attempt.step === 'captured') {
            await run(claim.attempt, undefined, ctx);
          } else if (attempt.charge_id) {
            await bus.request(subjects.payments.void, { chargeId: attempt.charge_id }, ctx, {
              timeoutMs: deps.paymentsTimeoutMs,
            });
          }
        }
        await deleteAttempt(db, attempt.idempotency_key);
      } catch (error) {
        deps.logger.warn(
          { err: error, orderId: attempt.order_id },
          'an expired place attempt could not be settled; the next sweep retries it',
        );
      }
    }
    return expired.length;
  }

  return { handlers: [handle(subjects.ordering.place, place)], sweepExpired };
}

/** Expired keys settled per sweep. */
const SWEEP_BATCH = 100;

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
