import { AppError } from '@pcp/service-kit';
import type { DeclineReason } from '../processor/payment-processor.js';

const declines: Record<DeclineReason, { code: string; message: string }> = {
  card_declined: { code: 'PAYMENT_FAILED', message: 'The card was declined' },
  other: { code: 'PAYMENT_FAILED', message: 'The card was declined' },
  insufficient_funds: { code: 'INSUFFICIENT_FUNDS', message: 'The card has insufficient funds' },
  incorrect_cvc: { code: 'INCORRECT_CVC', message: 'The security code does not match' },
  expired_card: { code: 'CARD_EXPIRED', message: 'The card has expired' },
  // The spec: show a generic decline message only.
  lost_card: { code: 'CARD_LOST_OR_STOLEN', message: 'The card was declined' },
  stolen_card: { code: 'CARD_LOST_OR_STOLEN', message: 'The card was declined' },
  processing_error: {
    code: 'PROCESSING_ERROR',
    message: 'The processor could not complete the payment; retry later',
  },
};

/**
 * A processor decline as the partner sees it: 400 PAYMENT_DECLINED (final: the attempt's
 * outcome, replayed for its key) with the spec's OrderError code at `/paymentId`, except a
 * processing error, the one decline worth retrying with the same card: 400 PAYMENT_FAILED,
 * retryable, and the key stays usable (docs/guide/orders.md#idempotency).
 */
export function declineError(reason: DeclineReason): AppError {
  const { code, message } = declines[reason];
  return new AppError(
    reason === 'processing_error' ? 'PAYMENT_FAILED' : 'PAYMENT_DECLINED',
    message,
    {
      errors: [{ code, message, pointer: '/paymentId' }],
    },
  );
}

/** Whether a stored decline code is the final outcome of its attempt. */
export function isFinalDecline(reason: DeclineReason): boolean {
  return reason !== 'processing_error';
}
