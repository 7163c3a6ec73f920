import { isKnownCurrency, subjects, type Charge } from '@pcp/contracts';
import {
  AppError,
  handle,
  requireEndUser,
  requirePartner,
  requirePaymentType,
  type HandlerBinding,
  type Logger,
} from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { findOwnedCard } from '../db/card.repository.js';
import {
  claimRefund,
  findChargeByKey,
  findRefund,
  findPartnerCharge,
  type ChargeCard,
  insertCharge,
  settleRefund,
  updateCharge,
} from '../db/charge.repository.js';
import type { CardRow, ChargeRow, PaymentsDatabase } from '../db/payments.table.js';
import { isExpired } from '../domain/card-rules.js';
import { declineError, isFinalDecline } from '../domain/declines.js';
import type { GuardedPaymentProcessor } from '../processor/guarded-payment-processor.js';
import { ProcessorRejectedError, type DeclineReason } from '../processor/payment-processor.js';
import { paymentTokenInvalid } from './card.handlers.js';
import { processorFailure } from './processor-errors.js';

export interface ChargeHandlerDeps {
  readonly db: Kysely<PaymentsDatabase>;
  readonly processor: GuardedPaymentProcessor;
  readonly clock: () => Date;
  readonly logger: Logger;
  readonly retryAfterSeconds: () => number;
}

/** Stored for a processor that no longer knows the card's token. */
const TOKEN_UNKNOWN = 'token_not_found';

function toCharge(row: ChargeRow, card: ChargeCard): Charge {
  return {
    chargeId: row.charge_id,
    paymentId: row.payment_id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    capturedAmount: row.captured_amount,
    refundedAmount: row.refunded_amount,
    brand: card.brand,
    last4: card.last4,
  };
}

/** The error a declined charge answers, every time its key is used again. */
function declinedError(row: ChargeRow): AppError {
  return row.decline_code === TOKEN_UNKNOWN
    ? paymentTokenInvalid()
    : declineError((row.decline_code ?? 'other') as DeclineReason);
}

function chargeState(row: ChargeRow, action: string): AppError {
  return new AppError('CHARGE_STATE_INVALID', `A charge that is ${row.status} cannot be ${action}`);
}

export function chargeHandlers(deps: ChargeHandlerDeps): HandlerBinding[] {
  const { db, processor } = deps;
  const unavailable = (error: unknown) => processorFailure(error, deps.retryAfterSeconds());

  /**
   * Ask the processor to authorize a recorded attempt. Its key names the attempt, so a
   * retry after an unknown outcome (timeout, breaker open) is the same call to the
   * processor and can never charge twice; only a processing error, a final answer that
   * invites a new try, moves to the next key.
   */
  async function runAuthorization(row: ChargeRow, card: CardRow): Promise<Charge> {
    if (!card.processor_token) throw paymentTokenInvalid();
    const decline = async (reason: string) => {
      const settled = await updateCharge(db, row, { status: 'declined', decline_code: reason });
      return declinedError(settled ?? { ...row, decline_code: reason });
    };
    if (isExpired(card.exp_month, card.exp_year, deps.clock())) throw await decline('expired_card');

    let outcome;
    try {
      outcome = await processor.authorize(
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
        throw await decline(TOKEN_UNKNOWN);
      }
      if (error instanceof ProcessorRejectedError) {
        deps.logger.error(
          { chargeId: row.charge_id, code: error.code },
          'processor refused an authorization',
        );
      }
      throw unavailable(error);
    }
    if (outcome.outcome === 'authorized') {
      const settled = await updateCharge(db, row, {
        status: 'authorized',
        processor_authorization_id: outcome.authorizationId,
      });
      return toCharge(settled ?? { ...row, status: 'authorized' }, card);
    }
    if (!isFinalDecline(outcome.reason)) {
      await updateCharge(db, row, { processor_attempt: row.processor_attempt + 1 });
      throw declineError(outcome.reason);
    }
    throw await decline(outcome.reason);
  }

  /** A charge of the calling partner that has been authorized at the processor. */
  async function authorizedCharge(partnerId: string, chargeId: string) {
    const found = await findPartnerCharge(db, partnerId, chargeId);
    if (!found) throw new AppError('CHARGE_NOT_FOUND', 'No charge with this id');
    return { ...found, authorizationId: found.row.processor_authorization_id };
  }

  /** A final processor refusal of a capture, void or refund: the charge's state forbids it. */
  function refused(error: unknown, row: ChargeRow, action: string): unknown {
    return error instanceof ProcessorRejectedError ? chargeState(row, action) : unavailable(error);
  }

  return [
    handle(subjects.payments.authorize, async (input, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const endUserId = requireEndUser(ctx);
      requirePaymentType(ctx, 'CARD');
      if (!isKnownCurrency(input.currency)) {
        throw new AppError('REQUEST_INVALID', 'Unknown currency', {
          errors: [
            { code: 'INVALID_VALUE', message: 'Unknown ISO 4217 currency', pointer: '/currency' },
          ],
        });
      }
      // Two lookups at once: one round trip's wait instead of two.
      const [card, earlier] = await Promise.all([
        findOwnedCard(db, partnerId, endUserId, input.paymentId),
        findChargeByKey(db, partnerId, endUserId, input.idempotencyKey),
      ]);
      if (!card) throw paymentTokenInvalid();
      let row = earlier;
      if (
        row &&
        (row.payment_id !== input.paymentId ||
          row.amount !== input.amount ||
          row.currency !== input.currency)
      ) {
        throw new AppError(
          'IDEMPOTENCY_KEY_CONFLICT',
          'This idempotency key was used for another payment',
        );
      }
      if (row?.status === 'declined') throw declinedError(row);
      if (row && row.status !== 'authorizing') return toCharge(row, card);
      if (card.deleted_at) throw paymentTokenInvalid();
      // Shed load before recording an attempt the processor cannot take now.
      const open = processor.refuseWhileOpen('authorize');
      if (open) throw unavailable(open);
      row ??= await insertCharge(db, {
        charge_id: randomUUID(),
        partner_id: partnerId,
        end_user_id: endUserId,
        payment_id: input.paymentId,
        idempotency_key: input.idempotencyKey,
        amount: input.amount,
        currency: input.currency,
      });
      return runAuthorization(row, card);
    }),

    handle(subjects.payments.capture, async ({ chargeId, amount }, ctx) => {
      const { row, card, authorizationId } = await authorizedCharge(
        requirePartner(ctx, 'distribution'),
        chargeId,
      );
      if (row.status === 'captured' || row.status.endsWith('refunded')) return toCharge(row, card);
      if (row.status !== 'authorized' || !authorizationId) throw chargeState(row, 'captured');
      if (amount !== undefined && amount > row.amount) {
        throw new AppError('REQUEST_INVALID', 'Cannot capture more than was authorized', {
          errors: [
            { code: 'OUT_OF_RANGE', message: 'At most the authorized amount', pointer: '/amount' },
          ],
        });
      }
      let captured;
      try {
        captured = await processor.capture(
          { authorizationId, ...(amount === undefined ? {} : { amount }) },
          { idempotencyKey: `pcp-capture-${row.charge_id}` },
        );
      } catch (error) {
        throw refused(error, row, 'captured');
      }
      const settled = await updateCharge(db, row, {
        status: 'captured',
        captured_amount: captured.capturedAmount,
      });
      return toCharge(settled ?? (await authorizedCharge(row.partner_id, chargeId)).row, card);
    }),

    handle(subjects.payments.void, async ({ chargeId }, ctx) => {
      const { row, card, authorizationId } = await authorizedCharge(
        requirePartner(ctx, 'distribution'),
        chargeId,
      );
      // Nothing is held on a declined card; a voided one is already released.
      if (row.status === 'voided' || row.status === 'declined') return toCharge(row, card);
      if (row.status !== 'authorized' || !authorizationId) throw chargeState(row, 'voided');
      try {
        await processor.void({ authorizationId }, { idempotencyKey: `pcp-void-${row.charge_id}` });
      } catch (error) {
        throw refused(error, row, 'voided');
      }
      const settled = await updateCharge(db, row, { status: 'voided' });
      return toCharge(settled ?? (await authorizedCharge(row.partner_id, chargeId)).row, card);
    }),

    handle(subjects.payments.refund, async ({ chargeId, amount, idempotencyKey }, ctx) => {
      const { row, card, authorizationId } = await authorizedCharge(
        requirePartner(ctx, 'distribution'),
        chargeId,
      );
      const earlier = await findRefund(db, chargeId, idempotencyKey);
      if (earlier && earlier.amount !== amount) {
        throw new AppError(
          'IDEMPOTENCY_KEY_CONFLICT',
          'This idempotency key was used for another refund',
        );
      }
      if (earlier?.status === 'succeeded') return toCharge(row, card);
      if (!authorizationId || !['captured', 'partially_refunded'].includes(row.status)) {
        throw chargeState(row, 'refunded');
      }
      if (amount > row.captured_amount - row.refunded_amount) {
        throw new AppError(
          'REQUEST_INVALID',
          'Cannot refund more than was captured and not refunded',
          {
            errors: [{ code: 'OUT_OF_RANGE', message: 'Too large', pointer: '/amount' }],
          },
        );
      }
      const refund =
        earlier ??
        (await claimRefund(db, {
          refund_id: randomUUID(),
          charge_id: chargeId,
          idempotency_key: idempotencyKey,
          amount,
        }));
      let refunded;
      try {
        refunded = await processor.refund(
          { authorizationId, amount },
          { idempotencyKey: `pcp-refund-${refund.refund_id}` },
        );
      } catch (error) {
        throw refused(error, row, 'refunded');
      }
      return toCharge(await settleRefund(db, refund, refunded.refundId), card);
    }),
  ];
}
