import { sql, type Kysely } from 'kysely';
import type { ConsoleSessionTable, GatewayDatabase } from './partner.table.js';

type Db = Kysely<GatewayDatabase>;

export type NewConsoleSession = Omit<ConsoleSessionTable, 'created_at' | 'last_seen_at'> & {
  created_at: Date;
};

/**
 * Insert a session and keep its tenant to `perTenant` active sessions: the tenant's ended
 * ones (past `expires_at`, or idle since `idleBefore`) are deleted, then its oldest beyond the
 * cap. Creations of one tenant are serialized, so concurrent sign-ins cannot overshoot it.
 * Returns the token hashes it deleted, for the caches that may still hold them.
 */
export function insertSession(
  db: Db,
  session: NewConsoleSession,
  limits: { perTenant: number; idleBefore: Date },
): Promise<Buffer[]> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`console_sessions:${session.tenant_id}`}, 0))`.execute(
      trx,
    );
    const ended = await trx
      .deleteFrom('console_sessions')
      .where('tenant_id', '=', session.tenant_id)
      .where((eb) =>
        eb.or([
          eb('expires_at', '<=', session.created_at),
          eb('last_seen_at', '<=', limits.idleBefore),
        ]),
      )
      .returning('token_hash')
      .execute();
    await trx
      .insertInto('console_sessions')
      .values({ ...session, last_seen_at: session.created_at })
      .execute();
    const evicted = await trx
      .deleteFrom('console_sessions')
      .where('tenant_id', '=', session.tenant_id)
      .where(
        'token_hash',
        'in',
        trx
          .selectFrom('console_sessions')
          .select('token_hash')
          .where('tenant_id', '=', session.tenant_id)
          .orderBy('created_at', 'desc')
          .orderBy('token_hash')
          .offset(limits.perTenant),
      )
      .returning('token_hash')
      .execute();
    return [...ended, ...evicted].map((row) => row.token_hash);
  });
}

export function findSession(db: Db, tokenHash: Buffer) {
  return db
    .selectFrom('console_sessions')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Record the session's use at `at`, unless a request did since `unlessSince`. */
export async function touchSession(db: Db, tokenHash: Buffer, at: Date, unlessSince: Date) {
  await db
    .updateTable('console_sessions')
    .set({ last_seen_at: at })
    .where('token_hash', '=', tokenHash)
    .where('last_seen_at', '<', unlessSince)
    .execute();
}

export async function deleteSession(db: Db, tokenHash: Buffer): Promise<boolean> {
  const deleted = await db
    .deleteFrom('console_sessions')
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}

/** End every session of a key (revoked) or of a partner in both modes (suspended). */
export async function deleteSessionsOf(
  db: Db,
  owner: { keyId: string } | { partnerId: string },
): Promise<void> {
  await db
    .deleteFrom('console_sessions')
    .where(
      'keyId' in owner ? 'key_id' : 'partner_id',
      '=',
      'keyId' in owner ? owner.keyId : owner.partnerId,
    )
    .execute();
}
