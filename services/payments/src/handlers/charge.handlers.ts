import { isKnownCurrency, subjects, type Charge } from '@pcp/contracts';
import {
  AppError,
  handle,
  requireEndUser,
  requirePartner,
  requirePaymentType,
  type HandlerBinding,
} from '@pcp/service-kit';
import { randomUUID } from 'node:crypto';
import type { ChargeActionDeps, ChargeActions } from '../charges/charge-actions.js';
import { findOwnedCard } from '../db/card.repository.js';
import {
  findChargeByOrder,
  findPartnerCharge,
  insertCharge,
  type ChargeCard,
} from '../db/charge.repository.js';
import type { ChargeRow } from '../db/payments.table.js';
import { paymentTokenInvalid } from './card.handlers.js';
import { processorFailure } from './processor-errors.js';

export function toCharge(row: ChargeRow, card: ChargeCard): Charge {
  return {
    chargeId: row.charge_id,
    orderId: row.order_id,
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

/** An order asked to be authorized for another partner, end user, card or amount. */
function orderConflict(): AppError {
  return new AppError(
    'IDEMPOTENCY_KEY_CONFLICT',
    'This order was authorized for another payment; an order has one charge',
  );
}

/**
 * The charge subjects: ordering authorizes, captures and releases an order's charge, and
 * refunds a cancelled order; every charge is the calling partner's.
 */
export function chargeHandlers(deps: ChargeActionDeps, actions: ChargeActions): HandlerBinding[] {
  const { db, processors } = deps;

  /** A charge of the calling partner, with what it shows of its card. */
  async function partnerCharge(partnerId: string, chargeId: string) {
    const found = await findPartnerCharge(db, partnerId, chargeId);
    if (!found) throw new AppError('CHARGE_NOT_FOUND', 'No charge with this id');
    return found;
  }

  return [
    handle(subjects.payments.authorize, async (input, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const endUserId = requireEndUser(ctx);
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
        findChargeByOrder(db, input.orderId),
      ]);
      const matches = (row: ChargeRow) =>
        row.partner_id === partnerId &&
        row.end_user_id === endUserId &&
        row.payment_id === input.paymentId &&
        row.amount === input.amount &&
        row.currency === input.currency &&
        row.mode === input.mode;
      // The order's charge first: what it holds is its answer, whatever became of the card or
      // the partner's payment types since.
      if (earlier) {
        if (!matches(earlier) || !card) throw orderConflict();
        return toCharge(await actions.resumeAuthorization(earlier, card), card);
      }
      requirePaymentType(ctx, 'CARD');
      // A card's token is its own mode's processor's: another mode's processor never knew it.
      if (!card || card.deleted_at || card.mode !== input.mode) throw paymentTokenInvalid();
      // Shed load (or refuse live without a live processor, or an unverified sandbox) before
      // recording an attempt the processor cannot take now.
      await processors.ready(input.mode);
      const open = processors.forMode(input.mode).refuseWhileOpen('authorize');
      if (open) throw processorFailure(open, processors.retryAfterSeconds(input.mode));
      const chargeId = randomUUID();
      const row = await insertCharge(db, {
        charge_id: chargeId,
        partner_id: partnerId,
        end_user_id: endUserId,
        payment_id: input.paymentId,
        order_id: input.orderId,
        amount: input.amount,
        currency: input.currency,
        mode: input.mode,
      });
      // Another request for the order recorded its charge first: answer as for a retry.
      if (row.charge_id !== chargeId) {
        if (!matches(row)) throw orderConflict();
        return toCharge(await actions.resumeAuthorization(row, card), card);
      }
      return toCharge(await actions.runAuthorization(row, card), card);
    }),

    handle(subjects.payments.capture, async ({ chargeId, amount }, ctx) => {
      const { row, card } = await partnerCharge(requirePartner(ctx, 'distribution'), chargeId);
      if (amount !== undefined && amount > row.amount) {
        throw new AppError('REQUEST_INVALID', 'Cannot capture more than was authorized', {
          errors: [
            { code: 'OUT_OF_RANGE', message: 'At most the authorized amount', pointer: '/amount' },
          ],
        });
      }
      return toCharge(await actions.captureCharge(row, amount), card);
    }),

    handle(subjects.payments.release, async ({ orderId }, ctx) => {
      const partnerId = requirePartner(ctx, 'distribution');
      const row = await findChargeByOrder(db, orderId);
      if (!row || row.partner_id !== partnerId) return { charge: null };
      const { card } = await partnerCharge(partnerId, row.charge_id);
      return { charge: toCharge(await actions.releaseCharge(row), card) };
    }),

    handle(subjects.payments.refund, async ({ chargeId, amount, idempotencyKey }, ctx) => {
      const { row, card } = await partnerCharge(requirePartner(ctx, 'distribution'), chargeId);
      return toCharge(await actions.refundCharge(row, amount, idempotencyKey), card);
    }),
  ];
}
