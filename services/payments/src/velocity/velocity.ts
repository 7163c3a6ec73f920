import type { PartnerMode } from '@pcp/contracts';
import { AppError } from '@pcp/service-kit';
import { sql, type Kysely, type Transaction } from 'kysely';
import { createHmac } from 'node:crypto';
import type { PaymentsDatabase, VelocityEventTable } from '../db/payments.table.js';

export interface VelocityLimits {
  /** Vault attempts one (partner, end user) may make per window. */
  readonly vaultAttempts: number;
  /**
   * Processor declines one card (by its hash, across end users and partners) may get per window,
   * in one mode: test-mode declines (the sandbox processor's) never count against live mode.
   */
  readonly cardDeclines: number;
  readonly windowSeconds: number;
}

type Scope = VelocityEventTable['scope'];

/** Expired events one recorded event deletes at most. */
const PRUNE_BATCH = 100;
type Db = Kysely<PaymentsDatabase> | Transaction<PaymentsDatabase>;

/** A card's declines are counted per mode: `<mode>/<card hash>`. */
const declineSubject = (mode: PartnerMode, cardHash: string) => `${mode}/${cardHash}`;

/** 429 PAYMENT_VELOCITY_EXCEEDED: retry once the oldest counted event leaves the window. */
export function velocityExceeded(message: string, retryAfterSeconds: number): AppError {
  return new AppError('PAYMENT_VELOCITY_EXCEEDED', message, { retryAfterSeconds });
}

/**
 * Velocity limits against card testing, counted in Postgres so every replica sees the same
 * counts: vault attempts per (partner, end user), and processor declines per card and mode. A
 * card is known by payments' keyed hash of its number (HMAC-SHA256), so the same card matches
 * under any end user while the stored hash reveals nothing of the number. A partner tenant is of
 * one mode, so vault attempts are too; a card's declines are counted in the mode of the
 * operation, so partners testing declines with the sandbox never hold back the same card live.
 */
export function createVelocity(db: Kysely<PaymentsDatabase>, key: string, limits: VelocityLimits) {
  const window = sql`make_interval(secs => ${limits.windowSeconds})`;

  /** Seconds until a slot frees when `subject` holds `limit` events in the window, else undefined. */
  async function overLimit(
    trx: Db,
    scope: Scope,
    subject: string,
    limit: number,
  ): Promise<number | undefined> {
    const recent = await trx
      .selectFrom('velocity_events')
      .select(sql<number>`extract(epoch from (at + ${window} - now()))`.as('frees_in'))
      .where('scope', '=', scope)
      .where('subject', '=', subject)
      .where('at', '>', sql<Date>`now() - ${window}`)
      .orderBy('at', 'desc')
      .limit(limit)
      .execute();
    const oldest = recent[limit - 1];
    return oldest ? Math.max(1, Math.ceil(Number(oldest.frees_in))) : undefined;
  }

  /**
   * Count one event, and delete up to PRUNE_BATCH events of any subject the window has left
   * behind: every event clears more than it adds, so the table holds about one window's events
   * with no sweeper (the rows of an end user or card never seen again go too).
   */
  async function record(trx: Db, scope: Scope, subject: string): Promise<void> {
    await sql`delete from velocity_events where ctid in (
      select ctid from velocity_events where at <= now() - ${window}
      limit ${PRUNE_BATCH} for update skip locked)`.execute(trx);
    await trx.insertInto('velocity_events').values({ scope, subject }).execute();
  }

  async function refuseDeclinedCard(trx: Db, mode: PartnerMode, cardHash: string): Promise<void> {
    const wait = await overLimit(
      trx,
      'decline',
      declineSubject(mode, cardHash),
      limits.cardDeclines,
    );
    if (wait !== undefined) {
      throw velocityExceeded('This card was declined too often lately; retry later', wait);
    }
  }

  return {
    cardHash: (cardNumber: string) => createHmac('sha256', key).update(cardNumber).digest('hex'),

    /**
     * Admit one vault attempt of the end user with this card, counted before the processor is
     * called; refused when the end user vaulted too often or the card was declined too often
     * in this mode.
     */
    admitVault(
      mode: PartnerMode,
      partnerId: string,
      endUserId: string,
      cardHash: string,
    ): Promise<void> {
      const owner = `${partnerId}/${endUserId}`;
      return db.transaction().execute(async (trx) => {
        // Concurrent attempts of one end user are counted one after another.
        await sql`select pg_advisory_xact_lock(hashtextextended(${`vault/${owner}`}, 0))`.execute(
          trx,
        );
        await refuseDeclinedCard(trx, mode, cardHash);
        const wait = await overLimit(trx, 'vault', owner, limits.vaultAttempts);
        if (wait !== undefined) {
          throw velocityExceeded('Too many cards vaulted lately; retry later', wait);
        }
        await record(trx, 'vault', owner);
      });
    },

    /**
     * Seconds to wait when the card was declined too often in this mode to be tried now, else
     * undefined.
     */
    cardDeclinesExceeded(mode: PartnerMode, cardHash: string): Promise<number | undefined> {
      return overLimit(db, 'decline', declineSubject(mode, cardHash), limits.cardDeclines);
    },

    recordDecline(mode: PartnerMode, cardHash: string): Promise<void> {
      return record(db, 'decline', declineSubject(mode, cardHash));
    },
  };
}

export type Velocity = ReturnType<typeof createVelocity>;
