import type { Session } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ConsoleSessionRow, GatewayDatabase } from '../db/partner.table.js';
import {
  deleteSession,
  findSession,
  insertSession,
  touchSession,
} from '../db/session.repository.js';
import type { Authenticator, Principal } from './authenticator.js';

/** 32 random bytes in base64url: what the cookie holds. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** The idle clock of a session moves in steps of at most this, not on every request. */
const MAX_TOUCH_INTERVAL_MS = 60_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest();
/** A session's id in invalidation messages: its token's hash in hex. */
export const sessionIdOf = (token: string) => hashToken(token).toString('hex');

/**
 * The session's CSRF token, derived from its session token, so it is stored nowhere and a
 * page that lost it reads it again (`GET /v1/sessions/current`); a site that cannot read the
 * cookie cannot compute it.
 */
function csrfTokenOf(token: string): string {
  return createHash('sha256').update('pcp-csrf\0').update(token).digest('base64url');
}

/** Whether a presented X-CSRF-Token is the session's (in constant time). */
export function csrfTokenMatches(token: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const expected = Buffer.from(csrfTokenOf(token));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A session in use: who it acts as (checked against its key just now) and what it is. */
export interface ActiveSession {
  readonly principal: Principal;
  readonly session: Session;
}

export interface SessionStoreOptions {
  readonly db: Kysely<GatewayDatabase>;
  /** Sessions act as their key: a revoked key or a suspended partner ends them. */
  readonly authenticator: Pick<Authenticator, 'activeKey'>;
  /** A session unused this long ends. */
  readonly idleMs: number;
  /** A session ends this long after it was made, however used. */
  readonly maxAgeMs: number;
  /** Active sessions of one tenant (a partner in one mode); a new one past it ends the oldest. */
  readonly perTenant: number;
  /** How long a session row is remembered (the auth cache's TTL); 0 reads it every time. */
  readonly cacheTtlMs: number;
  /** Session rows remembered per replica. */
  readonly cacheMax: number;
  /** Tell the other replicas to forget these sessions (hex token hashes). */
  announceEnded(tokenHashes: string[]): void;
  readonly now?: () => number;
}

/**
 * Console sessions (docs/guide/authentication.md#console-sessions) over the
 * `console_sessions` table. Rows are remembered for at most the auth cache's TTL, and every
 * use looks its key up through the authenticator, whose cache the same invalidation
 * messages clear: a revoked key or a suspended partner ends its sessions as fast as its keys.
 */
export function createSessionStore(options: SessionStoreOptions) {
  const now = options.now ?? Date.now;
  const touchEveryMs = Math.min(MAX_TOUCH_INTERVAL_MS, Math.floor(options.idleMs / 4));
  const cache = new LRUCache<string, ConsoleSessionRow>({
    max: options.cacheMax,
    ttl: Math.max(options.cacheTtlMs, 1),
  });
  const remember = options.cacheTtlMs > 0;
  // As in the authenticator: a read in flight across an invalidation answers its request
  // but is not remembered, so an ended session cannot come back into the cache.
  let invalidations = 0;

  const viewOf = (row: ConsoleSessionRow, token: string): Session => ({
    partnerId: row.tenant_id,
    accountId: row.partner_id,
    kind: row.kind,
    mode: row.mode,
    keyId: row.key_id,
    expiresAt: row.expires_at.toISOString(),
    csrfToken: csrfTokenOf(token),
  });

  async function readRow(hash: Buffer): Promise<ConsoleSessionRow | undefined> {
    const id = hash.toString('hex');
    const cached = cache.get(id);
    if (cached) return cached;
    const startedAt = invalidations;
    const row = await findSession(options.db, hash);
    if (row && remember && startedAt === invalidations) cache.set(id, row);
    return row;
  }

  function forget(ids: Iterable<string>) {
    invalidations++;
    for (const id of ids) cache.delete(id);
  }

  return {
    /** Whether the token's session is in memory: using it costs no session read. */
    remembers(token: string): boolean {
      return TOKEN_PATTERN.test(token) && cache.has(hashToken(token).toString('hex'));
    },

    /** A new session acting as `principal` (just authenticated by its key), and its token. */
    async create(principal: Principal): Promise<{ token: string; session: Session }> {
      const token = randomBytes(32).toString('base64url');
      const createdAt = now();
      const row = {
        token_hash: hashToken(token),
        key_id: principal.keyId,
        partner_id: principal.accountId,
        tenant_id: principal.partnerId,
        kind: principal.kind,
        mode: principal.mode,
        created_at: new Date(createdAt),
        expires_at: new Date(createdAt + options.maxAgeMs),
      };
      const ended = await insertSession(options.db, row, {
        perTenant: options.perTenant,
        idleBefore: new Date(createdAt - options.idleMs),
      });
      if (ended.length > 0) {
        const ids = ended.map((hash) => hash.toString('hex'));
        forget(ids);
        options.announceEnded(ids);
      }
      return { token, session: viewOf({ ...row, last_seen_at: row.created_at }, token) };
    },

    /**
     * The session of a cookie's token, with its key's current principal; null when there is
     * none, it expired (idle or absolute), or its key no longer authenticates. A use (a
     * request) moves its idle clock; a check (an open stream's) does not.
     */
    async resolve(token: string, use: 'use' | 'check' = 'use'): Promise<ActiveSession | null> {
      if (!TOKEN_PATTERN.test(token)) return null;
      const hash = hashToken(token);
      const row = await readRow(hash);
      if (!row) return null;
      const at = now();
      const idleSince = at - options.idleMs;
      if (row.expires_at.getTime() <= at || row.last_seen_at.getTime() <= idleSince) {
        forget([hash.toString('hex')]);
        await deleteSession(options.db, hash);
        return null;
      }
      const principal = await options.authenticator.activeKey(row.key_id);
      // The tenant check is the key's mode and partner, which never change: belt and braces.
      if (!principal || principal.partnerId !== row.tenant_id) return null;
      if (use === 'use' && at - row.last_seen_at.getTime() >= touchEveryMs) {
        row.last_seen_at = new Date(at);
        await touchSession(options.db, hash, row.last_seen_at, new Date(at - touchEveryMs));
      }
      return { principal: { ...principal, via: 'session' }, session: viewOf(row, token) };
    },

    /** Sign-out: the session ends on every replica. */
    async end(token: string): Promise<void> {
      if (!TOKEN_PATTERN.test(token)) return;
      const hash = hashToken(token);
      const id = hash.toString('hex');
      forget([id]);
      if (await deleteSession(options.db, hash)) options.announceEnded([id]);
    },

    /**
     * Forget remembered sessions after an admin change (a key revoked, a partner suspended)
     * or another replica's sign-out or eviction.
     */
    invalidate(target: { partnerId?: string; keyId?: string; sessions?: readonly string[] }) {
      const ids = new Set(target.sessions);
      if (target.partnerId !== undefined || target.keyId !== undefined) {
        for (const [id, row] of cache.entries()) {
          if (row.partner_id === target.partnerId || row.key_id === target.keyId) ids.add(id);
        }
      }
      forget(ids);
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
