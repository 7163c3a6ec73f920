import { sandboxCustomerEndUserId, sandboxCustomerPartnerId, subjects } from '@pcp/contracts';
import { handle, requireTestPartner, type HandlerBinding } from '@pcp/service-kit';
import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { OrderingDatabase } from '../db/ordering.table.js';

const count = (result: { numDeletedRows: bigint }[]) =>
  result.reduce((sum, part) => sum + Number(part.numDeletedRows), 0);

/**
 * `ordering.testReset` (docs/guide/sandbox.md#reset): in one transaction, every ordering row
 * of the calling test tenant: the orders it placed, and those the sandbox customer placed for
 * it (and their outbox events, status history, refunds owed, deliveries with their tries and
 * place attempts), its place attempts, addresses, webhook endpoint and deliveries, its webhook
 * stream's log, its stores' acceptance-timeout runs, and what the sandbox customer made for it.
 * Another partner's order at its stores is that partner's: it stays, with its deliveries and
 * its place attempt (a retry of its Idempotency-Key answers it again), and only leaves the
 * store side (`store_deleted_at`), as the reset deletes the stores. Payments' reset deletes
 * the charges of exactly the orders deleted here (those of the tenant and its sandbox
 * customer). A place still running (its lease held, no answer yet) is left to finish. The
 * stream itself (its secret) stays: a `pcp listen` open across the reset keeps receiving,
 * signed as before.
 */
export function testResetHandler(db: Kysely<OrderingDatabase>): HandlerBinding {
  return handle(subjects.ordering.testReset, async (_input, ctx) => {
    const partnerId = requireTestPartner(ctx);
    const customer = sandboxCustomerEndUserId(partnerId);
    // The tenant's own orders: those it placed, and those the sandbox customer placed for it.
    const ownOrders = (eb: ExpressionBuilder<OrderingDatabase, 'orders'>) =>
      eb.or([
        eb('partner_id', '=', partnerId),
        eb.and([eb('partner_id', '=', sandboxCustomerPartnerId), eb('end_user_id', '=', customer)]),
      ]);
    const deleted = await db.transaction().execute(async (trx) => {
      const orderIds = trx.selectFrom('orders').select('order_id').where(ownOrders);
      // Their superseded tries (no foreign key: they go with their deliveries here; the latest
      // is on the delivery's row) and status history (which would go with its order by
      // cascade, deleted first so the reset reports it too).
      const tries = await trx
        .deleteFrom('webhook_delivery_attempts')
        .where(
          'delivery_id',
          'in',
          trx
            .selectFrom('webhook_deliveries')
            .select('delivery_id')
            .where((eb) =>
              eb.or([eb('partner_id', '=', partnerId), eb('order_id', 'in', orderIds)]),
            ),
        )
        .execute();
      const history = await trx
        .deleteFrom('order_status_changes')
        .where('order_id', 'in', orderIds)
        .execute();
      const refunds = await trx
        .deleteFrom('order_refunds')
        .where('order_id', 'in', orderIds)
        .execute();
      const deliveries = await trx
        .deleteFrom('webhook_deliveries')
        .where((eb) => eb.or([eb('partner_id', '=', partnerId), eb('order_id', 'in', orderIds)]))
        .returning('event_id')
        .execute();
      // A store event no delivery refers to any more was recorded for this tenant only.
      const eventIds = [...new Set(deliveries.map((row) => row.event_id))];
      const storeEvents =
        eventIds.length === 0
          ? []
          : await trx
              .deleteFrom('webhook_store_events')
              .where('event_id', 'in', eventIds)
              .where((eb) =>
                eb.not(
                  eb.exists(
                    eb
                      .selectFrom('webhook_deliveries')
                      .select(sql<number>`1`.as('one'))
                      .whereRef(
                        'webhook_deliveries.event_id',
                        '=',
                        'webhook_store_events.event_id',
                      ),
                  ),
                ),
              )
              .execute();
      const outbox = await trx
        .deleteFrom('outbox')
        .where('aggregate_type', '=', 'order')
        // aggregate_id is text; order ids are uuids.
        .where(
          'aggregate_id',
          'in',
          trx
            .selectFrom('orders')
            .select(sql<string>`order_id::text`.as('id'))
            .where(ownOrders),
        )
        .execute();
      const attempts = await trx
        .deleteFrom('place_attempts')
        .where((eb) =>
          eb.or([
            eb('partner_id', '=', partnerId),
            eb.and([
              eb('partner_id', '=', sandboxCustomerPartnerId),
              eb('end_user_id', '=', customer),
            ]),
            eb('order_id', 'in', orderIds),
          ]),
        )
        .where((eb) =>
          eb.or([
            eb('response_status', 'is not', null),
            eb('lease_expires_at', 'is', null),
            eb('lease_expires_at', '<', sql<Date>`now()`),
          ]),
        )
        .execute();
      const orders = await trx.deleteFrom('orders').where(ownOrders).execute();
      // Other partners' orders at its stores stay theirs; the stores go with this reset.
      await trx
        .updateTable('orders')
        .set({ store_deleted_at: sql<Date>`now()` })
        .where('store_partner_id', '=', partnerId)
        .where('store_deleted_at', 'is', null)
        .execute();
      const timeouts = await trx
        .deleteFrom('store_acceptance_timeouts')
        .where('store_partner_id', '=', partnerId)
        .execute();
      const addresses = await trx
        .deleteFrom('addresses')
        .where((eb) =>
          eb.or([
            eb('partner_id', '=', partnerId),
            eb.and([
              eb('partner_id', '=', sandboxCustomerPartnerId),
              eb('end_user_id', '=', customer),
            ]),
          ]),
        )
        .execute();
      const endpoints = await trx
        .deleteFrom('webhook_endpoints')
        .where('partner_id', '=', partnerId)
        .execute();
      const streamed = await trx
        .deleteFrom('webhook_stream_events')
        .where('partner_id', '=', partnerId)
        .execute();
      return {
        'ordering.orders': count(orders),
        'ordering.order_status_changes': count(history),
        'ordering.order_refunds': count(refunds),
        'ordering.outbox': count(outbox),
        'ordering.place_attempts': count(attempts),
        'ordering.addresses': count(addresses),
        'ordering.webhook_endpoints': count(endpoints),
        'ordering.webhook_deliveries': deliveries.length,
        'ordering.webhook_delivery_attempts': count(tries),
        'ordering.webhook_store_events': count(storeEvents),
        'ordering.webhook_stream_events': count(streamed),
        'ordering.store_acceptance_timeouts': count(timeouts),
      };
    });
    return { deleted };
  });
}
