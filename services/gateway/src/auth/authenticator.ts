import {
  isApiVersion,
  LATEST_API_VERSION,
  type ApiVersion,
  type PartnerKind,
  type PartnerMode,
  type PaymentType,
} from '@pcp/contracts';
import { LRUCache } from 'lru-cache';
import type { ActiveKey } from '../db/partner.repository.js';
import type { RateLimitOverrides } from '../db/partner.table.js';
import { apiKeyMatches, parseApiKey } from './api-key.js';

export interface Principal {
  /**
   * The tenant the key acts as: the partner's id for a live key, its test tenant's id for a
   * test key (docs/guide/sandbox.md#modes). Services key every row by it.
   */
  readonly partnerId: string;
  /** The partner (its live id) whatever the key's mode: what admin commands name. */
  readonly accountId: string;
  readonly mode: PartnerMode;
  readonly kind: PartnerKind;
  readonly keyId: string;
  readonly paymentTypes: readonly PaymentType[];
  readonly rateLimits: RateLimitOverrides;
  /** How the request proved it: an API key, or a console session made from one. */
  readonly via: 'key' | 'session';
  /**
   * The partner's pinned API version (docs/guide/versioning.md#pins): what its requests
   * without PCP-Version are read and answered in, the same for its live and test keys. Always
   * set by the authenticator; absent (principals made elsewhere), the newest.
   */
  readonly apiVersion?: ApiVersion;
}

interface VerifiedKey {
  readonly principal: Principal;
  readonly keyHash: Buffer;
}

export interface AuthenticatorOptions {
  /** The active key with that public id: the one database query of authentication. */
  findKey(keyId: string): Promise<ActiveKey | undefined>;
  /** How long a key id's lookup is remembered; 0 looks every key up. */
  ttlMs: number;
  /** Verified keys remembered, least recently used evicted first. */
  maxKeys: number;
  /** Key ids found unknown remembered, in a cache of their own. */
  maxUnknownKeys: number;
}

/**
 * Verifies API keys, remembering each key id's lookup briefly so the hot path does not hit
 * Postgres. Verified keys and unknown key ids live in separate LRU caches, so a flood of
 * made-up keys evicts only other made-up key ids, never a partner's key. Revocation takes
 * effect at once on gateways that receive the invalidation message, and within the TTL
 * everywhere.
 */
export function createAuthenticator(options: AuthenticatorOptions) {
  const remember = options.ttlMs > 0;
  const verified = new LRUCache<string, VerifiedKey>({
    max: options.maxKeys,
    ttl: options.ttlMs,
  });
  const unknown = new LRUCache<string, true>({ max: options.maxUnknownKeys, ttl: options.ttlMs });
  // Bumped by every invalidation. A lookup that was in flight across one may have read the
  // row before the change committed, so its result answers that request but is not cached:
  // otherwise a revoked key could come back into the cache for a whole TTL.
  let invalidations = 0;

  async function lookup(keyId: string): Promise<VerifiedKey | undefined> {
    const cached = verified.get(keyId);
    if (cached || unknown.has(keyId)) return cached;
    const startedAt = invalidations;
    const row = await options.findKey(keyId);
    const cacheable = remember && startedAt === invalidations;
    if (!row) {
      if (cacheable) unknown.set(keyId, true);
      return undefined;
    }
    const found: VerifiedKey = {
      keyHash: row.key_hash,
      principal: {
        partnerId: row.mode === 'test' ? row.test_partner_id : row.partner_id,
        accountId: row.partner_id,
        mode: row.mode,
        kind: row.kind,
        keyId: row.key_id,
        paymentTypes: row.payment_types,
        rateLimits: row.rate_limits,
        via: 'key',
        // A pin this release does not know was written by a newer one (then rolled back): the
        // newest version this release runs is the closest to it.
        apiVersion: isApiVersion(row.api_version) ? row.api_version : LATEST_API_VERSION,
      },
    };
    if (cacheable) verified.set(keyId, found);
    return found;
  }

  return {
    /**
     * The principal of a key verified recently, from memory alone; undefined when the key
     * would have to be looked up, or is wrong or malformed.
     */
    recentlyVerified(apiKey: string): Principal | undefined {
      const keyId = parseApiKey(apiKey);
      const found = keyId === null ? undefined : verified.get(keyId);
      return found && apiKeyMatches(apiKey, found.keyHash) ? found.principal : undefined;
    },
    /** The principal for a presented key, or null when the key is unknown, revoked or wrong. */
    async authenticate(apiKey: string): Promise<Principal | null> {
      const keyId = parseApiKey(apiKey);
      if (!keyId) return null;
      const found = await lookup(keyId);
      return found && apiKeyMatches(apiKey, found.keyHash) ? found.principal : null;
    },
    /**
     * The principal of the active key with that public id, its secret unchecked: for a console
     * session, which proved the key when it was made and lives only while the key is active.
     * Null when the key is revoked, its partner suspended, or there is no such key.
     */
    async activeKey(keyId: string): Promise<Principal | null> {
      return (await lookup(keyId))?.principal ?? null;
    },
    /** Forget cached keys of a partner (or one key) after an admin change. */
    invalidate(target: { partnerId?: string; keyId?: string }): void {
      invalidations++;
      if (target.keyId) {
        verified.delete(target.keyId);
        unknown.delete(target.keyId);
      }
      if (!target.partnerId) return;
      // A resumed partner's keys may be remembered as unknown, under ids we cannot tie to it.
      unknown.clear();
      const partnerKeys = [...verified.entries()]
        .filter(([, entry]) => entry.principal.accountId === target.partnerId)
        .map(([keyId]) => keyId);
      for (const keyId of partnerKeys) verified.delete(keyId);
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
