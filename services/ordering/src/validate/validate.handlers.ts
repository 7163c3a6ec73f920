import { subjects } from '@pcp/contracts';
import { handle, type HandlerBinding } from '@pcp/service-kit';
import type { OrderEvaluator } from './order-evaluator.js';

/**
 * The validate subject: the evaluation's answer, the paymentId checked with the rest, the store
 * read from this replica's cached profile (place reads it live).
 */
export function validateHandlers(evaluate: OrderEvaluator): HandlerBinding[] {
  return [
    handle(
      subjects.ordering.validate,
      async (input, ctx) =>
        (await evaluate(input, ctx, { checkPaymentId: true, cachedStore: true })).order,
    ),
  ];
}
