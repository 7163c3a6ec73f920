import type { PartnerKind, PaymentType } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import { findActiveKey } from '../db/partner.repository.js';
import type { GatewayDatabase, RateLimitOverrides } from '../db/partner.table.js';
import { apiKeyMatches, parseApiKey } from './api-key.js';

/** The authenticated caller of a request. */
export interface Principal {
  readonly partnerId: string;
  readonly kind: PartnerKind;
  readonly keyId: string;
  readonly paymentTypes: readonly PaymentType[];
  readonly rateLimits: RateLimitOverrides;
}

interface KnownKey {
  readonly principal: Principal;
  readonly keyHash: Buffer;
}

/** Keys (a few hundred bytes each) remembered in each cache: a few MB at most. */
const MAX_CACHED_KEYS = 10_000;

/**
 * Verifies API keys against the gateway's table, caching each key id briefly so the hot
 * path does not hit Postgres. Keys found and key ids not found live in separate LRU caches,
 * so a flood of made-up keys can only evict other made-up keys, never a partner's.
 * Revocation takes effect at once on gateways that receive the invalidation message, and
 * within the TTL everywhere.
 */
export function createAuthenticator(db: Kysely<GatewayDatabase>, ttlMs: number) {
  const caching = ttlMs > 0;
  const known = new LRUCache<string, KnownKey>({ max: MAX_CACHED_KEYS, ttl: ttlMs || 1 });
  const unknown = new LRUCache<string, true>({ max: MAX_CACHED_KEYS, ttl: ttlMs || 1 });

  async function lookup(keyId: string): Promise<KnownKey | undefined> {
    const cached = known.get(keyId);
    if (cached || unknown.has(keyId)) return cached;
    const row = await findActiveKey(db, keyId);
    if (!row) {
      if (caching) unknown.set(keyId, true);
      return undefined;
    }
    const found: KnownKey = {
      keyHash: row.key_hash,
      principal: {
        partnerId: row.partner_id,
        kind: row.kind,
        keyId: row.key_id,
        paymentTypes: row.payment_types,
        rateLimits: row.rate_limits,
      },
    };
    if (caching) known.set(keyId, found);
    return found;
  }

  return {
    /**
     * The principal of a key verified recently (in memory, no I/O), or undefined when the
     * key must be looked up (or is not shaped like a key).
     */
    cached(apiKey: string): Principal | undefined {
      const keyId = parseApiKey(apiKey);
      const found = keyId ? known.get(keyId) : undefined;
      return found && apiKeyMatches(apiKey, found.keyHash) ? found.principal : undefined;
    },
    /** The principal for a presented key, or null when the key is unknown, revoked or wrong. */
    async authenticate(apiKey: string): Promise<Principal | null> {
      const keyId = parseApiKey(apiKey);
      if (!keyId) return null;
      const found = await lookup(keyId);
      return found && apiKeyMatches(apiKey, found.keyHash) ? found.principal : null;
    },
    /** Forget cached keys of a partner (or one key) after an admin change. */
    invalidate(target: { partnerId?: string; keyId?: string }): void {
      if (target.keyId) {
        known.delete(target.keyId);
        unknown.delete(target.keyId);
      }
      if (!target.partnerId) return;
      for (const [keyId, entry] of known.entries()) {
        if (entry.principal.partnerId === target.partnerId) known.delete(keyId);
      }
    },
  };
}
export type Authenticator = ReturnType<typeof createAuthenticator>;
