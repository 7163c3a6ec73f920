import { sandboxCustomerEndUserId, sandboxCustomerPartnerId, subjects } from '@pcp/contracts';
import { handle, requireTestPartner, type HandlerBinding } from '@pcp/service-kit';
import type { Kysely } from 'kysely';
import type { PaymentsDatabase } from '../db/payments.table.js';

/**
 * `payments.testReset` (docs/guide/sandbox.md#reset): the calling test tenant's cards,
 * charges (with their refunds and what the reconciler did to them) and velocity counts, and
 * those the sandbox customer made for it, in one transaction. These are the charges of exactly
 * the orders ordering's reset deletes (placed by the tenant or by the sandbox customer for
 * it): another partner's charge for an order at the tenant's stores stays, as its order does.
 * A charge still being authorized is left to finish (and its card).
 */
export function testResetHandler(db: Kysely<PaymentsDatabase>): HandlerBinding {
  return handle(subjects.payments.testReset, async (_input, ctx) => {
    const partnerId = requireTestPartner(ctx);
    const customer = sandboxCustomerEndUserId(partnerId);
    const deleted = await db.transaction().execute(async (trx) => {
      const charges = trx
        .selectFrom('charges')
        .select('charge_id')
        .where((eb) =>
          eb.or([
            eb('partner_id', '=', partnerId),
            eb.and([
              eb('partner_id', '=', sandboxCustomerPartnerId),
              eb('end_user_id', '=', customer),
            ]),
          ]),
        )
        .where('status', '!=', 'authorizing');
      const refunds = await trx
        .deleteFrom('refunds')
        .where('charge_id', 'in', charges)
        .executeTakeFirst();
      const actions = await trx
        .deleteFrom('reconciler_actions')
        .where('charge_id', 'in', charges)
        .executeTakeFirst();
      const deletedCharges = await trx
        .deleteFrom('charges')
        .where((eb) =>
          eb.or([
            eb('partner_id', '=', partnerId),
            eb.and([
              eb('partner_id', '=', sandboxCustomerPartnerId),
              eb('end_user_id', '=', customer),
            ]),
          ]),
        )
        .where('status', '!=', 'authorizing')
        .executeTakeFirst();
      const cards = await trx
        .deleteFrom('cards')
        .where((eb) =>
          eb.or([
            eb('partner_id', '=', partnerId),
            eb.and([
              eb('partner_id', '=', sandboxCustomerPartnerId),
              eb('end_user_id', '=', customer),
            ]),
          ]),
        )
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('charges')
                .select('charges.charge_id')
                .whereRef('charges.payment_id', '=', 'cards.payment_id'),
            ),
          ),
        )
        .executeTakeFirst();
      const velocity = await trx
        .deleteFrom('velocity_events')
        .where((eb) =>
          eb.or([
            eb('subject', 'like', `${partnerId}/%`),
            eb('subject', '=', `${sandboxCustomerPartnerId}/${customer}`),
          ]),
        )
        .executeTakeFirst();
      return {
        'payments.cards': Number(cards.numDeletedRows),
        'payments.charges': Number(deletedCharges.numDeletedRows),
        'payments.refunds': Number(refunds.numDeletedRows),
        'payments.reconciler_actions': Number(actions.numDeletedRows),
        'payments.velocity_events': Number(velocity.numDeletedRows),
      };
    });
    return { deleted };
  });
}
