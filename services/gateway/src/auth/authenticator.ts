import type { PartnerKind, PaymentType } from '@pcp/contracts';
import type { Kysely } from 'kysely';
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

interface CacheEntry {
  expiresAt: number;
  found: { principal: Principal; keyHash: Buffer } | null;
}

const MAX_CACHE_ENTRIES = 10_000;

/**
 * Verifies API keys against the gateway's table, caching each key id briefly so the hot
 * path does not hit Postgres. Revocation takes effect at once on gateways that receive the
 * invalidation message, and within the TTL everywhere.
 */
export function createAuthenticator(db: Kysely<GatewayDatabase>, ttlMs: number) {
  const cache = new Map<string, CacheEntry>();

  async function lookup(keyId: string): Promise<CacheEntry['found']> {
    const cached = cache.get(keyId);
    if (cached && cached.expiresAt > Date.now()) return cached.found;
    const row = await findActiveKey(db, keyId);
    const found = row
      ? {
          keyHash: row.key_hash,
          principal: {
            partnerId: row.partner_id,
            kind: row.kind,
            keyId: row.key_id,
            paymentTypes: row.payment_types,
            rateLimits: row.rate_limits,
          },
        }
      : null;
    if (ttlMs > 0) {
      if (cache.size >= MAX_CACHE_ENTRIES) cache.clear();
      cache.set(keyId, { found, expiresAt: Date.now() + ttlMs });
    }
    return found;
  }

  return {
    /** The principal for a presented key, or null when the key is unknown, revoked or wrong. */
    async authenticate(apiKey: string): Promise<Principal | null> {
      const keyId = parseApiKey(apiKey);
      if (!keyId) return null;
      const found = await lookup(keyId);
      return found && apiKeyMatches(apiKey, found.keyHash) ? found.principal : null;
    },
    /** Forget cached keys of a partner (or one key) after an admin change. */
    invalidate(target: { partnerId?: string; keyId?: string }): void {
      for (const [keyId, entry] of cache) {
        if (
          keyId === target.keyId ||
          (target.partnerId && entry.found?.principal.partnerId === target.partnerId)
        ) {
          cache.delete(keyId);
        }
      }
    },
  };
}
export type Authenticator = ReturnType<typeof createAuthenticator>;
