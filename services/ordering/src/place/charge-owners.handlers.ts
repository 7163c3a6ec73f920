import { subjects, type ChargeOwners } from '@pcp/contracts';
import { handle, type HandlerBinding } from '@pcp/service-kit';
import { sql, type Kysely } from 'kysely';
import type { OrderingMutant } from '../config.js';
import type { OrderingDatabase } from '../db/ordering.table.js';

/** Orders shown per charge at most: more than one is already what the reconciler reports. */
const MAX_ORDERS_PER_CHARGE = 5;

type Db = Kysely<OrderingDatabase>;
type Question = { chargeId: string; orderId: string | null };

export interface ChargeOwnersDeps {
  readonly db: Db;
  /**
   * Test-only: called between the two reads (the fault suite holds it to widen the window in
   * which an order commits; `ORDERING_TEST_OWNERS_READ_HOLD_MS`).
   */
  readonly betweenReads?: () => Promise<void>;
  /** Test-only: the fault suite's planted defect (`ORDERING_TEST_MUTANT`). */
  readonly mutant?: OrderingMutant;
}

/**
 * Payments' reconciler asks who holds its charges: the orders that name each one (with the
 * refund a cancel owes), and the place attempt of its order id while ordering keeps it. Both
 * are read in one REPEATABLE READ snapshot, attempts first: place records an order and its
 * attempt's answer in one transaction, so an answered attempt always comes with its order.
 * (Two reads on two connections once reported an order committed between them as "no order,
 * attempt answered", and the reconciler refunded a live order.) Only payments may send this
 * (NATS permissions); it carries no partner, and answers ids, states and amounts only.
 */
export function chargeOwnersHandler(deps: ChargeOwnersDeps): HandlerBinding {
  return handle(subjects.ordering.chargeOwners, async ({ charges }) => {
    const read =
      deps.mutant === 'owners-torn'
        ? tornRead(deps, charges)
        : deps.db
            .transaction()
            .setIsolationLevel('repeatable read')
            .setAccessMode('read only')
            .execute(async (trx) => {
              const attempts = await readAttempts(trx, charges);
              await deps.betweenReads?.();
              return { attempts, orders: await readOrders(trx, charges) };
            });
    const { orders, attempts } = await read;
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
            refund: order.refund_state ?? 'none',
            refundOwedSince: order.refund_owed_since?.toISOString() ?? null,
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

function readAttempts(db: Db, charges: readonly Question[]) {
  const orderIds = charges.flatMap((charge) => (charge.orderId ? [charge.orderId] : []));
  if (orderIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('place_attempts')
    .select(['order_id', 'step', 'response_status', 'expires_at'])
    .where('order_id', 'in', orderIds)
    .execute();
}

/** The orders naming the charges, each with its cancel's refund: owed (since when) or settled. */
function readOrders(db: Db, charges: readonly Question[]) {
  return db
    .selectFrom('orders')
    .leftJoin('order_refunds', (join) =>
      join
        .onRef('order_refunds.order_id', '=', 'orders.order_id')
        .on('order_refunds.reason', '=', 'cancel'),
    )
    .select([
      'orders.order_id',
      'orders.charge_id',
      'orders.state',
      'orders.total_minor',
      'orders.currency',
      'order_refunds.state as refund_state',
      sql<Date | null>`case when order_refunds.state = 'owed' then order_refunds.created_at end`.as(
        'refund_owed_since',
      ),
    ])
    .where(
      'orders.charge_id',
      'in',
      charges.map((charge) => charge.chargeId),
    )
    .execute();
}

/** The planted defect: orders read first, then attempts, on two connections, no snapshot. */
async function tornRead(deps: ChargeOwnersDeps, charges: readonly Question[]) {
  const orders = await readOrders(deps.db, charges);
  await deps.betweenReads?.();
  return { orders, attempts: await readAttempts(deps.db, charges) };
}
