import { errorCodes } from '@pcp/contracts';
import { describe, expect, it } from 'vitest';
import { declineError } from '../../src/domain/declines.js';

describe('declineError', () => {
  it.each([
    ['card_declined', 'PAYMENT_DECLINED', 'PAYMENT_FAILED'],
    ['other', 'PAYMENT_DECLINED', 'PAYMENT_FAILED'],
    ['insufficient_funds', 'PAYMENT_DECLINED', 'INSUFFICIENT_FUNDS'],
    ['incorrect_cvc', 'PAYMENT_DECLINED', 'INCORRECT_CVC'],
    ['expired_card', 'PAYMENT_DECLINED', 'CARD_EXPIRED'],
    ['lost_card', 'PAYMENT_DECLINED', 'CARD_LOST_OR_STOLEN'],
    ['stolen_card', 'PAYMENT_DECLINED', 'CARD_LOST_OR_STOLEN'],
    ['processing_error', 'PAYMENT_FAILED', 'PROCESSING_ERROR'],
  ] as const)('%s → %s with %s at /paymentId', (reason, code, elementCode) => {
    const error = declineError(reason);
    expect(error.code).toBe(code);
    expect(error.errors).toEqual([
      { code: elementCode, message: expect.any(String), pointer: '/paymentId' },
    ]);
  });

  it('makes only a processing error retryable, and says nothing of lost or stolen cards', () => {
    expect(errorCodes[declineError('processing_error').code].retryable).toBe(true);
    expect(errorCodes[declineError('insufficient_funds').code].retryable).toBe(false);
    expect(declineError('stolen_card').message).toBe(declineError('card_declined').message);
  });
});
