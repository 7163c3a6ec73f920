import { describe, expect, it } from 'vitest';
import {
  apiKeyMatches,
  bearerToken,
  generateApiKey,
  hashApiKey,
  parseApiKey,
} from '../../src/auth/api-key.js';

const KEY_SHAPE = /^pcp_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

describe('generateApiKey', () => {
  it('makes pcp_<16 hex>_<43 base64url> keys whose id and hash match', () => {
    const { keyId, apiKey, keyHash } = generateApiKey();
    expect(apiKey).toMatch(KEY_SHAPE);
    expect(keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(apiKey.startsWith(`pcp_${keyId}_`)).toBe(true);
    expect(keyHash).toHaveLength(32);
    expect(keyHash.equals(hashApiKey(apiKey))).toBe(true);
    expect(parseApiKey(apiKey)).toBe(keyId);
  });

  it('never repeats a key', () => {
    const keys = new Set(Array.from({ length: 200 }, () => generateApiKey().apiKey));
    expect(keys.size).toBe(200);
    for (const key of keys) expect(key).toMatch(KEY_SHAPE);
  });
});

describe('parseApiKey', () => {
  const { apiKey, keyId } = generateApiKey();
  const secret = apiKey.slice(`pcp_${keyId}_`.length);

  it('returns the key id of a well-formed key', () => {
    expect(parseApiKey(apiKey)).toBe(keyId);
    expect(parseApiKey(`pcp_0123456789abcdef_${'A'.repeat(43)}`)).toBe('0123456789abcdef');
    expect(parseApiKey(`pcp_0123456789abcdef_${'-_'.repeat(21)}z`)).toBe('0123456789abcdef');
  });

  it.each([
    ['wrong prefix', `pcx_${keyId}_${secret}`],
    ['upper-case prefix', `PCP_${keyId}_${secret}`],
    ['no prefix', `${keyId}_${secret}`],
    ['short key id', `pcp_${keyId.slice(1)}_${secret}`],
    ['long key id', `pcp_${keyId}0_${secret}`],
    ['upper-case key id', `pcp_${'ABCDEF0123456789'}_${secret}`],
    ['non-hex key id', `pcp_${'g'.repeat(16)}_${secret}`],
    ['short secret', `pcp_${keyId}_${secret.slice(1)}`],
    ['long secret', `${apiKey}A`],
    ['padding', `${apiKey.slice(0, -1)}=`],
    ['plus in secret', `pcp_${keyId}_+${secret.slice(1)}`],
    ['leading space', ` ${apiKey}`],
    ['trailing space', `${apiKey} `],
    ['trailing newline', `${apiKey}\n`],
    ['inner space', `pcp_${keyId}_ ${secret.slice(1)}`],
    ['empty', ''],
    ['missing separator', `pcp_${keyId}${secret}`],
  ])('rejects a %s', (_label, text) => {
    expect(parseApiKey(text)).toBeNull();
  });
});

describe('apiKeyMatches', () => {
  it('is true only for the key the hash was made from', () => {
    const key = generateApiKey();
    const other = generateApiKey();
    expect(apiKeyMatches(key.apiKey, key.keyHash)).toBe(true);
    expect(apiKeyMatches(other.apiKey, key.keyHash)).toBe(false);
    // Same id, other secret.
    const forged = `pcp_${key.keyId}_${other.apiKey.slice(-43)}`;
    expect(parseApiKey(forged)).toBe(key.keyId);
    expect(apiKeyMatches(forged, key.keyHash)).toBe(false);
    // A stored hash of another length never matches (and does not throw).
    expect(apiKeyMatches(key.apiKey, key.keyHash.subarray(0, 16))).toBe(false);
    expect(apiKeyMatches(key.apiKey, Buffer.alloc(0))).toBe(false);
  });
});

describe('bearerToken', () => {
  it('reads the token of a Bearer header, whatever the scheme’s case', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('BEARER abc')).toBe('abc');
    expect(bearerToken('BeArEr pcp_0123456789abcdef_x')).toBe('pcp_0123456789abcdef_x');
  });

  it('tolerates extra spaces around the token', () => {
    expect(bearerToken('Bearer    abc')).toBe('abc');
    expect(bearerToken('Bearer abc   ')).toBe('abc');
  });

  it('returns null for a missing header, another scheme or a malformed value', () => {
    expect(bearerToken(undefined)).toBeNull();
    expect(bearerToken('')).toBeNull();
    expect(bearerToken('Basic x')).toBeNull();
    expect(bearerToken('Basic dXNlcjpwYXNz')).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken('Bearer ')).toBeNull();
    expect(bearerToken('Bearerabc')).toBeNull();
    expect(bearerToken('Bearer abc def')).toBeNull();
    expect(bearerToken('abc')).toBeNull();
    expect(bearerToken('Token abc')).toBeNull();
  });
});
