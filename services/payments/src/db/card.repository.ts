import { maxCardsPerEndUser, type PartnerMode } from '@pcp/contracts';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { CardRow, PaymentsDatabase } from './payments.table.js';

type Db = Kysely<PaymentsDatabase> | Transaction<PaymentsDatabase>;

export interface CardToSave {
  readonly paymentId: string;
  readonly partnerId: string;
  readonly endUserId: string;
  readonly processorToken: string;
  readonly fingerprint: string;
  readonly cardHash: string;
  readonly brand: string;
  readonly last4: string;
  readonly expMonth: number;
  readonly expYear: number;
  readonly mode: PartnerMode;
}

/**
 * Save a vaulted card. The same card (fingerprint) of the same end user keeps its row and
 * paymentId, taking the new token and expiry; a new one is refused (`limitReached`) when the
 * end user already holds the most cards allowed. The owner's rows are locked meanwhile, so
 * concurrent vaults cannot pass the limit together.
 */
export async function saveCard(
  db: Kysely<PaymentsDatabase>,
  card: CardToSave,
  maxCards: number,
): Promise<{ row: CardRow; created: boolean } | { limitReached: true }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`${card.partnerId}/${card.endUserId}`}, 0))`.execute(
      trx,
    );
    const existing = await trx
      .selectFrom('cards')
      .selectAll()
      .where('partner_id', '=', card.partnerId)
      .where('end_user_id', '=', card.endUserId)
      .where('fingerprint', '=', card.fingerprint)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (existing) {
      const row = await trx
        .updateTable('cards')
        .set({
          processor_token: card.processorToken,
          exp_month: card.expMonth,
          exp_year: card.expYear,
          brand: card.brand,
          last4: card.last4,
          card_hash: card.cardHash,
          updated_at: sql`now()`,
        })
        .where('payment_id', '=', existing.payment_id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { row, created: false };
    }
    if ((await countLiveCards(trx, card.partnerId, card.endUserId)) >= maxCards) {
      return { limitReached: true };
    }
    const row = await trx
      .insertInto('cards')
      .values({
        payment_id: card.paymentId,
        partner_id: card.partnerId,
        end_user_id: card.endUserId,
        processor_token: card.processorToken,
        fingerprint: card.fingerprint,
        card_hash: card.cardHash,
        brand: card.brand,
        last4: card.last4,
        exp_month: card.expMonth,
        exp_year: card.expYear,
        mode: card.mode,
        deleted_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { row, created: true };
  });
}

export async function countLiveCards(
  db: Db,
  partnerId: string,
  endUserId: string,
): Promise<number> {
  const { count } = await db
    .selectFrom('cards')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(count);
}

/**
 * Whether vaulting this card (by payments' hash of its number) would add one more card to an
 * end user who holds `maxCards` already: decided before the processor is asked.
 */
export async function cardLimitReached(
  db: Db,
  partnerId: string,
  endUserId: string,
  cardHash: string,
  maxCards: number,
): Promise<boolean> {
  const live = await db
    .selectFrom('cards')
    .select('card_hash')
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .where('deleted_at', 'is', null)
    .execute();
  return live.length >= maxCards && !live.some((card) => card.card_hash === cardHash);
}

/** The end user's live cards, newest first. */
export function listLiveCards(db: Db, partnerId: string, endUserId: string): Promise<CardRow[]> {
  return db
    .selectFrom('cards')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('payment_id')
    .limit(maxCardsPerEndUser)
    .execute();
}

/** One of the end user's cards, deleted ones included (charges made with it name it). */
export function findOwnedCard(
  db: Db,
  partnerId: string,
  endUserId: string,
  paymentId: string,
): Promise<CardRow | undefined> {
  return db
    .selectFrom('cards')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .executeTakeFirst();
}

/** Delete one of the end user's cards: its token is forgotten. False when it is not theirs. */
export async function deleteOwnedCard(
  db: Db,
  partnerId: string,
  endUserId: string,
  paymentId: string,
): Promise<boolean> {
  const result = await db
    .updateTable('cards')
    .set({ deleted_at: sql`coalesce(deleted_at, now())`, processor_token: null })
    .where('payment_id', '=', paymentId)
    .where('partner_id', '=', partnerId)
    .where('end_user_id', '=', endUserId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
