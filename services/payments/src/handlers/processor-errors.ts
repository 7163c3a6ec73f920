import { AppError } from '@pcp/service-kit';
import { ProcessorUnavailableError } from '../processor/payment-processor.js';

/**
 * A processor call that did not complete: 503 PAYMENT_PROCESSOR_UNAVAILABLE, retryable
 * with the same key (its outcome is unknown; the processor's idempotency makes the retry
 * safe). Anything else is a defect and stays what it is (INTERNAL).
 */
export function processorFailure(error: unknown, retryAfterSeconds: number): unknown {
  if (error instanceof ProcessorUnavailableError) {
    return new AppError(
      'PAYMENT_PROCESSOR_UNAVAILABLE',
      'The payment processor is unavailable; retry with the same idempotency key',
      { retryAfterSeconds, cause: error },
    );
  }
  return error;
}
