// Place's records: each recovery point reached (and its failpoint), and the key's final
// answer, the order or the failure.
import { outboxRowOf, type AppError, type RequestContext } from '@pcp/service-kit';
import type { OrderDetails, OrderRow, PlaceSnapshot, PlaceStep } from '../db/ordering.table.js';
import { acceptByOf, estimatedReadyAtOf } from '../lifecycle/acceptance-window.js';
import { orderEventOf, statusChangeOf, toOrder } from '../lifecycle/order.repository.js';
import {
  advanceAttempt,
  type Commit,
  type HeldAttempt,
  recordAttemptOutcome,
  recordPlacedOrder,
} from './place-attempt.repository.js';
import type { PlacePayments } from './place-payments.js';
import type { PlaceFailpoint, PlaceSagaDeps } from './place-saga.js';

/** How the steps of place record where they got to and how the key ends. */
export function placeRecords(
  deps: PlaceSagaDeps,
  { releasePayment }: Pick<PlacePayments, 'releasePayment'>,
) {
  const { db } = deps;

  async function advance(
    attempt: HeldAttempt,
    step: PlaceStep,
    changes: Parameters<typeof advanceAttempt>[3],
    commit?: Commit,
  ): Promise<HeldAttempt> {
    const row = await advanceAttempt(db, attempt, step, changes, commit);
    failpoint(step);
    return row;
  }

  function failpoint(point: PlaceFailpoint): void {
    if (deps.failpoint === point && Math.random() < (deps.failpointRate ?? 1)) {
      process.kill(process.pid, 'SIGKILL');
    }
  }

  /**
   * The order, open, and the key's answer, in one statement: pending with its acceptance
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
      store_deleted_at: null,
      created_at: now,
      updated_at: now,
    };
    // The order's text, serialized once: the recorded answer, replied as it is from now on.
    const body = JSON.stringify(toOrder(row));
    const { values: event, envelope } = outboxRowOf(
      orderEventOf(row, 'order.created', null, deps.prefix),
    );
    const recorded = await recordPlacedOrder(
      db,
      attempt,
      { order: row, statusChange: statusChangeOf(row, null), event, envelope },
      { status: 201, body },
      deps.retentionMs,
    );
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

  return { advance, failpoint, recordOrder, recordFailure };
}

export type PlaceRecords = ReturnType<typeof placeRecords>;
