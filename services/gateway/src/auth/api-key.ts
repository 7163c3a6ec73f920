import type { PartnerMode } from '@pcp/contracts';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys look like `pcp_<mode>_<keyId>_<secret>`: the mode (`live` or `test`,
 * docs/guide/sandbox.md#modes) so a partner sees at a glance which one it holds, a
 * 16-hex-digit public id (indexed lookup) and 32 random bytes in base64url. Keys made before
 * modes (`pcp_<keyId>_<secret>`) are live. Only the SHA-256 of the whole key is stored, so
 * the mode in the text cannot be changed without the key failing to match.
 */
const KEY_PATTERN = /^pcp_(?:(?:live|test)_)?([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

export interface GeneratedApiKey {
  keyId: string;
  apiKey: string;
  keyHash: Buffer;
}

export function generateApiKey(mode: PartnerMode): GeneratedApiKey {
  const keyId = randomBytes(8).toString('hex');
  const apiKey = `pcp_${mode}_${keyId}_${randomBytes(32).toString('base64url')}`;
  return { keyId, apiKey, keyHash: hashApiKey(apiKey) };
}

export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey).digest();
}

/** The key's public id, or null when the text is not shaped like a key. */
export function parseApiKey(apiKey: string): string | null {
  return KEY_PATTERN.exec(apiKey)?.[1] ?? null;
}

/** Constant-time comparison of a presented key against the stored hash. */
export function apiKeyMatches(apiKey: string, storedHash: Buffer): boolean {
  const presented = hashApiKey(apiKey);
  return presented.length === storedHash.length && timingSafeEqual(presented, storedHash);
}

/** `Bearer <key>` → the key, or null when the header is absent or of another scheme. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match?.[1] ?? null;
}
