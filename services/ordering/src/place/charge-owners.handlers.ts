import { subjects, type ChargeOwners } from '@pcp/contracts';
import { handle, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { OrderingDatabase } from '../db/ordering.table.js';

/** Orders shown per charge at most: more than one is already what the reconciler reports. */
const MAX_ORDERS_PER_CHARGE = 5;

/**
 * Payments' reconciler asks who holds its charges: the orders that name each one, and the
 * place attempt of its order id while ordering keeps it. Only payments may send this
 * (NATS permissions); it carries no partner, and answers ids, states and amounts only.
 */
export function chargeOwnersHandler(db: Kysely<OrderingDatabase>): HandlerBinding {
  return handle(subjects.ordering.chargeOwners, async ({ charges }) => {
    const chargeIds = charges.map((charge) => charge.chargeId);
    const orderIds = charges.flatMap((charge) => (charge.orderId ? [charge.orderId] : []));
    const [orders, attempts] = await Promise.all([
      db
        .selectFrom('orders')
        .select(['order_id', 'charge_id', 'state', 'total_minor', 'currency'])
        .where('charge_id', 'in', chargeIds)
        .execute(),
      orderIds.length === 0
        ? []
        : db
            .selectFrom('place_attempts')
            .select(['order_id', 'step', 'response_status', 'expires_at'])
            .where('order_id', 'in', orderIds)
            .execute(),
    ]);
    const attemptOf = new Map(attempts.map((attempt) => [attempt.order_id, attempt]));
    const owners: ChargeOwners['owners'] = charges.map(({ chargeId, orderId }) => {
      const attempt = orderId ? attemptOf.get(orderId) : undefined;
      return {
        chargeId,
        orders: orders
          .filter((order) => order.charge_id === chargeId)
          .slice(0, MAX_ORDERS_PER_CHARGE)
          .map((order) => ({
            orderId: order.order_id,
            state: order.state,
            totalMinor: order.total_minor,
            currency: order.currency,
          })),
        attempt: attempt
          ? {
              orderId: attempt.order_id,
              step: attempt.step,
              answered: attempt.response_status !== null,
              expiresAt: attempt.expires_at.toISOString(),
            }
          : null,
      };
    });
    return { owners };
  });
}
