import { AppError, type Logger } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import {
  claimRefund,
  failRefund,
  pendingRefunds,
  RefundRefusedError,
  settleRefunds,
  updateCharge,
  type RefundClaim,
} from '../db/charge.repository.js';
import type { ChargeRow, PaymentsDatabase } from '../db/payments.table.js';
import { isExpired } from '../domain/card-rules.js';
import { declineError, isFinalDecline } from '../domain/declines.js';
import { paymentTokenInvalid } from '../handlers/card.handlers.js';
import { processorFailure } from '../handlers/processor-errors.js';
import type { ModeProcessors } from '../processor/mode-processors.js';
import type { PaymentsMutant } from '../config.js';
import type { Velocity } from '../velocity/velocity.js';
import {
  ProcessorRejectedError,
  type DeclineReason,
  type ProcessorAuthorization,
} from '../processor/payment-processor.js';

export interface ChargeActionDeps {
  readonly db: Kysely<PaymentsDatabase>;
  /** Each charge's calls go to the processor of its mode. */
  readonly processors: ModeProcessors;
  readonly clock: () => Date;
  readonly logger: Logger;
  readonly velocity: Velocity;
  /** Test-only: called where a crash loses an authorization the processor made. */
  readonly failpoint?: (point: 'authorized-unrecorded') => void;
  /** Test-only: the planted defect of the fault suite's mutation check (`PAYMENTS_TEST_MUTANT`). */
  readonly mutant?: PaymentsMutant;
}

/**
 * What authorizing needs of the card: its processor token (null once the card is deleted) and
 * payments' hash of its number (null on cards vaulted before velocity limits).
 */
export interface ChargeCardToken {
  readonly processor_token: string | null;
  readonly card_hash: string | null;
  readonly exp_month: number;
  readonly exp_year: number;
}

/** Stored for a processor that no longer knows the card's token. */
const TOKEN_UNKNOWN = 'token_not_found';
/** Stored for a charge refused unasked of the processor: its card was declined too often. */
const VELOCITY_EXCEEDED = 'velocity_exceeded';

/**
 * The error a declined charge answers, every time its order asks again. A card refused by the
 * velocity limit is a decline too (400 PAYMENT_DECLINED, final for its place key, nothing
 * held), told apart by PAYMENT_VELOCITY_EXCEEDED at `/paymentId`.
 */
export function declinedError(row: ChargeRow): AppError {
  if (row.decline_code === TOKEN_UNKNOWN) return paymentTokenInvalid();
  if (row.decline_code === VELOCITY_EXCEEDED) {
    const message = 'This card was declined too often lately; try again later';
    return new AppError('PAYMENT_DECLINED', message, {
      errors: [{ code: 'PAYMENT_VELOCITY_EXCEEDED', message, pointer: '/paymentId' }],
    });
  }
  return declineError((row.decline_code ?? 'other') as DeclineReason);
}

export function chargeStateInvalid(row: ChargeRow, action: string): AppError {
  return new AppError('CHARGE_STATE_INVALID', `A charge that is ${row.status} cannot be ${action}`);
}

/**
 * The processor refused a call of payments' own (final: asking again changes nothing until
 * what it holds changes), named by the processor's code, never as a state payments assumes.
 */
function processorRefused(
  error: ProcessorRejectedError,
  action: 'capture' | 'void' | 'refund',
): AppError {
  return new AppError(
    'PAYMENT_PROCESSOR_REFUSED',
    `The payment processor refused to ${action} the charge: ${error.code}`,
    { cause: error },
  );
}

/** Why payments itself would not claim a refund. */
function refundRefusal(error: RefundRefusedError): AppError {
  switch (error.reason) {
    case 'key_conflict':
      return new AppError(
        'IDEMPOTENCY_KEY_CONFLICT',
        'This idempotency key was used for another refund',
      );
    case 'not_refundable':
      return chargeStateInvalid(error.charge, 'refunded');
    case 'too_large':
      return new AppError(
        'REQUEST_INVALID',
        'Cannot refund more than was captured and not refunded',
        { errors: [{ code: 'OUT_OF_RANGE', message: 'Too large', pointer: '/amount' }] },
      );
  }
}

/**
 * What payments does with a charge at the processor, shared by the handlers and the
 * reconciler. Every call carries a key derived from the charge, so a repeated call after an
 * unknown outcome is the same call to the processor; an authorization whose outcome was
 * never recorded is asked of the processor (by the charge id it carries as its reference)
 * before anything else is done with it, so it is never authorized twice, however late.
 */
export function createChargeActions(deps: ChargeActionDeps) {
  const { db, processors } = deps;
  const unavailable = (row: ChargeRow, error: unknown) =>
    processorFailure(error, processors.retryAfterSeconds(row.mode));

  /** The row as another request left it, when a conditional update lost the race. */
  const reread = (row: ChargeRow) =>
    db
      .selectFrom('charges')
      .selectAll()
      .where('charge_id', '=', row.charge_id)
      .executeTakeFirstOrThrow();

  async function decline(row: ChargeRow, reason: string): Promise<AppError> {
    const settled = await updateCharge(db, row, { status: 'declined', decline_code: reason });
    return declinedError(settled ?? { ...row, decline_code: reason });
  }

  /** Send the authorization (again, under the same key after an unknown outcome). */
  async function runAuthorization(row: ChargeRow, card: ChargeCardToken): Promise<ChargeRow> {
    if (!card.processor_token) throw await decline(row, TOKEN_UNKNOWN);
    if (isExpired(card.exp_month, card.exp_year, deps.clock())) {
      throw await decline(row, 'expired_card');
    }
    // Card testing: a card declined too often lately is not shown to the processor again.
    if (card.card_hash && (await deps.velocity.cardDeclinesExceeded(row.mode, card.card_hash))) {
      throw await decline(row, VELOCITY_EXCEEDED);
    }
    let outcome;
    try {
      outcome = await processors.forMode(row.mode).authorize(
        {
          token: card.processor_token,
          amount: row.amount,
          currency: row.currency,
          reference: row.charge_id,
        },
        { idempotencyKey: `pcp-authorize-${row.charge_id}-${row.processor_attempt}` },
      );
    } catch (error) {
      if (error instanceof ProcessorRejectedError && error.code === TOKEN_UNKNOWN) {
        throw await decline(row, TOKEN_UNKNOWN);
      }
      if (error instanceof ProcessorRejectedError) {
        deps.logger.error(
          { chargeId: row.charge_id, code: error.code },
          'processor refused an authorization',
        );
      }
      throw unavailable(row, error);
    }
    if (outcome.outcome === 'authorized') {
      deps.failpoint?.('authorized-unrecorded');
      // Relaxed: lost in a database crash, the charge is `authorizing` again, and whatever
      // asks of it next learns the authorization from the processor by the charge's reference.
      const settled = await updateCharge(
        db,
        row,
        { status: 'authorized', processor_authorization_id: outcome.authorizationId },
        'relaxed',
      );
      return settled ?? reread(row);
    }
    if (!isFinalDecline(outcome.reason)) {
      await updateCharge(db, row, { processor_attempt: row.processor_attempt + 1 });
      throw declineError(outcome.reason);
    }
    if (card.card_hash) await deps.velocity.recordDecline(row.mode, card.card_hash);
    throw await decline(row, outcome.reason);
  }

  /**
   * An authorization whose outcome was never recorded (`authorizing`): what the processor
   * holds for it, recorded; the row unchanged when the processor holds nothing.
   */
  async function learnAuthorization(row: ChargeRow): Promise<ChargeRow> {
    let found: ProcessorAuthorization[];
    try {
      found = await processors
        .forMode(row.mode)
        .findAuthorizations({ reference: row.charge_id }, {});
    } catch (error) {
      throw unavailable(row, error);
    }
    // Earlier keys of the charge ended in processing errors (declined); at most one holds money.
    const held = found.find((authorization) => authorization.status !== 'declined');
    if (!held) return row;
    return adoptProcessorState(row, held);
  }

  /**
   * Record what the processor says the charge is, where that only moves it on (an answer
   * that was lost): an authorization made, a capture or a void. Money the processor refunded
   * beyond what payments recorded is adopted only as the refunds payments asked for and
   * never heard back about (`pending`), whose amounts make up the difference exactly. Anything
   * else is left as it is, for the caller to report.
   */
  async function adoptProcessorState(
    row: ChargeRow,
    held: ProcessorAuthorization,
  ): Promise<ChargeRow> {
    const sameMoney =
      held.amount === row.amount && held.currency.toUpperCase() === row.currency.toUpperCase();
    if (!sameMoney) return row;
    const capturedAtProcessor = held.status !== 'authorized' && held.status !== 'voided';
    let current = row;
    if (held.status === 'authorized' && row.status === 'authorizing') {
      current = await moveTo(row, { status: 'authorized' }, held);
    } else if (
      held.status === 'voided' &&
      (row.status === 'authorizing' || row.status === 'authorized')
    ) {
      current = await moveTo(row, { status: 'voided' }, held);
    } else if (
      capturedAtProcessor &&
      (row.status === 'authorizing' || row.status === 'authorized')
    ) {
      current = await moveTo(
        row,
        { status: 'captured', captured_amount: held.capturedAmount },
        held,
      );
    }
    if (held.refundedAmount > current.refunded_amount && current.captured_amount > 0) {
      const pending = await pendingRefunds(db, current.charge_id);
      const missing = held.refundedAmount - current.refunded_amount;
      if (pending.reduce((sum, refund) => sum + refund.amount, 0) === missing) {
        current = await settleRefunds(
          db,
          current.charge_id,
          pending.map((refund) => ({ refundId: refund.refund_id, processorRefundId: null })),
        );
      }
    }
    return current;
  }

  async function moveTo(
    row: ChargeRow,
    change: Parameters<typeof updateCharge>[2],
    held: ProcessorAuthorization,
  ): Promise<ChargeRow> {
    const settled = await updateCharge(db, row, {
      ...change,
      processor_authorization_id: held.authorizationId,
    });
    return settled ?? reread(row);
  }

  /** An existing charge asked to authorize again: its outcome, learnt where it was unknown. */
  async function resumeAuthorization(row: ChargeRow, card: ChargeCardToken): Promise<ChargeRow> {
    if (row.status === 'declined') throw declinedError(row);
    if (row.status !== 'authorizing') return row;
    const learnt = await learnAuthorization(row);
    if (learnt.status !== 'authorizing') return learnt;
    // Nothing at the processor: this very attempt may now be made (the same key again).
    return runAuthorization(row, card);
  }

  async function captureCharge(asked: ChargeRow, amount?: number): Promise<ChargeRow> {
    // An authorization whose relaxed record a database crash lost is learnt again first.
    const row = asked.status === 'authorizing' ? await learnAuthorization(asked) : asked;
    if (row.status === 'captured' || row.status.endsWith('refunded')) return row;
    if (row.status !== 'authorized' || !row.processor_authorization_id) {
      throw chargeStateInvalid(row, 'captured');
    }
    let captured;
    try {
      captured = await processors.forMode(row.mode).capture(
        {
          authorizationId: row.processor_authorization_id,
          ...(amount === undefined ? {} : { amount }),
        },
        { idempotencyKey: `pcp-capture-${row.charge_id}` },
      );
    } catch (error) {
      throw refused(error, row, 'capture');
    }
    // Relaxed: lost in a database crash, the charge is `authorized` again; capturing it again
    // is the same capture (its key), and a release asks the processor first (`currentState`).
    const settled = await updateCharge(
      db,
      row,
      { status: 'captured', captured_amount: captured.capturedAmount },
      'relaxed',
    );
    return settled ?? reread(row);
  }

  async function voidCharge(row: ChargeRow): Promise<ChargeRow> {
    // Nothing is held on a declined card; a voided one is already released.
    if (row.status === 'voided' || row.status === 'declined') return row;
    if (row.status !== 'authorized' || !row.processor_authorization_id) {
      throw chargeStateInvalid(row, 'voided');
    }
    try {
      await processors
        .forMode(row.mode)
        .void(
          { authorizationId: row.processor_authorization_id },
          { idempotencyKey: `pcp-void-${row.charge_id}` },
        );
    } catch (error) {
      throw refused(error, row, 'void');
    }
    const settled = await updateCharge(db, row, { status: 'voided' });
    return settled ?? reread(row);
  }

  /**
   * Refund `amount` of a captured charge (without one: whatever is left) once per
   * `idempotencyKey`. The claim is made with the charge locked, then the processor is asked
   * under the refund's own key, so a retry after a lost answer is the same call.
   */
  async function refundCharge(
    asked: ChargeRow,
    amount: number | undefined,
    idempotencyKey: string,
  ): Promise<ChargeRow> {
    // A capture whose relaxed record a database crash lost is learnt from the processor first,
    // so the refund it owes is never refused as "not captured".
    const row = asked.captured_amount === 0 ? await currentState(asked) : asked;
    let claim: RefundClaim;
    try {
      claim = await claimRefund(db, { chargeId: row.charge_id, idempotencyKey, amount });
    } catch (error) {
      if (!(error instanceof RefundRefusedError)) throw error;
      throw refundRefusal(error);
    }
    if (claim.kind !== 'send') return claim.charge;
    const { refund, charge } = claim;
    const attempt = deps.mutant === 'refund-twice' ? randomUUID() : refund.processor_attempt;
    let refunded;
    try {
      refunded = await processors.forMode(charge.mode).refund(
        { authorizationId: charge.processor_authorization_id!, amount: refund.amount },
        {
          idempotencyKey:
            attempt === 0
              ? `pcp-refund-${refund.refund_id}`
              : `pcp-refund-${refund.refund_id}-${attempt}`,
        },
      );
    } catch (error) {
      if (error instanceof ProcessorRejectedError) {
        await failRefund(db, refund.refund_id, error.code);
        throw processorRefused(error, 'refund');
      }
      throw unavailable(charge, error);
    }
    return settleRefunds(db, charge.charge_id, [
      { refundId: refund.refund_id, processorRefundId: refunded.refundId },
    ]);
  }

  /**
   * Leave nothing held for the charge's order: an authorization is voided (an unknown one is
   * learnt first), a capture refunded in full, a released charge left as it is.
   */
  async function releaseCharge(row: ChargeRow): Promise<ChargeRow> {
    const known = await currentState(row);
    switch (known.status) {
      case 'authorizing': // the processor holds nothing for it
      case 'declined':
      case 'voided':
      case 'refunded':
        return known;
      case 'authorized':
        return voidCharge(known);
      case 'captured':
      case 'partially_refunded':
        return refundCharge(known, undefined, `release-${known.charge_id}`);
    }
  }

  /**
   * The charge as the processor has it where payments may not know (an unknown authorization,
   * or an authorization whose capture's answer may have been lost): releasing must void what
   * is held and refund what was taken, whatever payments recorded.
   */
  async function currentState(row: ChargeRow): Promise<ChargeRow> {
    if (row.status === 'authorizing') return learnAuthorization(row);
    if (row.status !== 'authorized' || !row.processor_authorization_id) return row;
    let held: ProcessorAuthorization | undefined;
    try {
      held = await processors
        .forMode(row.mode)
        .retrieve({ authorizationId: row.processor_authorization_id }, {});
    } catch (error) {
      throw unavailable(row, error);
    }
    return held ? adoptProcessorState(row, held) : row;
  }

  /** A final processor refusal of a capture or void, by the processor's own code. */
  function refused(error: unknown, row: ChargeRow, action: 'capture' | 'void'): unknown {
    return error instanceof ProcessorRejectedError
      ? processorRefused(error, action)
      : unavailable(row, error);
  }

  return {
    runAuthorization,
    resumeAuthorization,
    learnAuthorization,
    adoptProcessorState,
    captureCharge,
    voidCharge,
    refundCharge,
    releaseCharge,
  };
}

export type ChargeActions = ReturnType<typeof createChargeActions>;
