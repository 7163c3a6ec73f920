// Place as a saga: its named steps and their compensations, and the runner that takes a key
// from its last recovery point to its final answer under the attempt's lease.
import type { PlaceOrderRequest } from '@pcp/contracts';
import { AppError, type BusClient, type Logger, type RequestContext } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import type { OrderingMutant } from '../config.js';
import type { OrderEvaluator } from '../validate/order-evaluator.js';
import type { OrderingDatabase, PlaceStep } from '../db/ordering.table.js';
import { answerOf, isFinal } from './idempotency.js';
import {
  type HeldAttempt,
  LeaseLostError,
  releaseLease,
  renewLease,
} from './place-attempt.repository.js';
import { placeCompensation } from './place-compensation.js';
import { placePayments } from './place-payments.js';
import { placeRecords } from './place-records.js';
import { placeSteps, type Run } from './place-steps.js';
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
  /**
   * Test-only: SIGKILL this process right after this recovery point commits (`captured`: right
   * after payments captured, before the order is recorded), for `failpointRate` of places.
   */
  readonly failpoint?: PlaceFailpoint;
  readonly failpointRate?: number;
  /** Test-only: every new order's acceptance window, in seconds, whatever its store's. */
  readonly testAcceptanceWindowSeconds?: number;
  /** Test-only: the fault suite's planted defect (`ORDERING_TEST_MUTANT`). */
  readonly mutant?: OrderingMutant;
}

type ActiveStep = Exclude<PlaceStep, 'recorded'>;

/** Where a test may kill the process: after a recovery point, or between capture and record. */
export type PlaceFailpoint = PlaceStep | 'captured';

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
 * `capturing`. A point waits for the WAL flush only when it holds an external call's key or a
 * duty the sweeper cannot re-derive: `started` and a `capturing` reached without submitting
 * commit relaxed (lost in a database crash, the key is back at its previous point: nothing has
 * left the platform before `validated`, and authorizing again answers the order's charge,
 * captured or not); the next durable point flushes them too. Past its deadline a key is settled (`settleExpired`), never resumed, by the
 * sweeper or by the retry that finds it first.
 */
export function createPlaceSaga(deps: PlaceSagaDeps) {
  const { db } = deps;
  const payments = placePayments(deps);
  const records = placeRecords(deps, payments);
  const { recordFailure } = records;
  const { validate, authorizePayment, submitOrder, captureAndRecord, recordRejection } = placeSteps(
    deps,
    payments,
    records,
  );
  const { expire } = placeCompensation(deps, payments, records);

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

  return { run, settleExpired };
}

export type PlaceSaga = ReturnType<typeof createPlaceSaga>;
