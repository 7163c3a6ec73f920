import type { PaymentsDatabase } from '@pcp/payments';
import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';

/**
 * A live card as payments vaulted it while a live processor was configured, written straight to
 * the payments database: what a deployment that has none now must still refuse to charge.
 * Resolves its paymentId.
 */
export async function insertLiveCard(
  db: Kysely<PaymentsDatabase>,
  owner: { partnerId: string; endUserId: string },
): Promise<string> {
  const paymentId = randomUUID();
  await db
    .insertInto('cards')
    .values({
      payment_id: paymentId,
      partner_id: owner.partnerId,
      end_user_id: owner.endUserId,
      processor_token: 'tok_live',
      fingerprint: `fp-${paymentId}`,
      card_hash: null,
      brand: 'VISA',
      last4: '4242',
      exp_month: 12,
      exp_year: 2035,
      mode: 'live',
      deleted_at: null,
    })
    .execute();
  return paymentId;
}
